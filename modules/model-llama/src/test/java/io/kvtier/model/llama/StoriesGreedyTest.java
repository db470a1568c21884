package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.tokenizer.Tokenizer;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * stories260K ({@code ../shared/models}, Llama 2 architecture, F32): greedy decoding from BOS
 * writes the story llama.cpp writes, and a position's logits do not depend on the batch split.
 */
class StoriesGreedyTest {
  static final String STORIES = "models/tinyllamas-stories-260k-f32.gguf";
  static final int[] EXPECTED_PREFIX = {
    403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426
  };

  private static GgufFile file;
  private static LlamaModel model;

  @BeforeAll
  static void open() throws IOException {
    Path path = SharedFiles.require(STORIES);
    file = GgufFile.open(path);
    model = LlamaModel.of(file);
  }

  @AfterAll
  static void close() {
    if (file != null) {
      file.close();
    }
  }

  static int argmax(float[] logits) {
    int best = 0;
    for (int i = 1; i < logits.length; i++) {
      if (logits[i] > logits[best]) {
        best = i;
      }
    }
    return best;
  }

  static int[] greedy(LlamaModel model, int bos, int count) {
    KvStore kv = ArrayKvStore.forModel(model);
    int[] ids = new int[count];
    int token = bos;
    for (int i = 0; i < count; i++) {
      token = argmax(model.decode(token, i, kv));
      ids[i] = token;
    }
    return ids;
  }

  @Test
  void greedyFromBosTellsTheStoryOfLily() {
    int bos = file.getInt("tokenizer.ggml.bos_token_id");
    int[] ids = greedy(model, bos, 80);
    String text = Tokenizer.of(file).decode(ids);
    System.out.println("stories260K greedy from BOS: " + text.replace("\n", "\\n"));
    assertThat(Arrays.copyOf(ids, EXPECTED_PREFIX.length))
        .as("ids %s, text %s", Arrays.toString(ids), text)
        .containsExactly(EXPECTED_PREFIX);
    assertThat(text.strip()).startsWith("Once upon a time, there was a little girl named Lily.");
  }

  @Test
  void logitsAreBitIdenticalWhateverTheBatchSplit() {
    int[] tokens = new int[40];
    tokens[0] = file.getInt("tokenizer.ggml.bos_token_id");
    System.arraycopy(greedy(model, tokens[0], 39), 0, tokens, 1, 39);

    float[][] whole = model.forward(tokens, 0, ArrayKvStore.forModel(model), true);
    for (int[] split : new int[][] {{1, 39}, {7, 13, 20}, {16, 16, 8}}) {
      KvStore kv = ArrayKvStore.forModel(model);
      int start = 0;
      for (int length : split) {
        float[][] part =
            model.forward(Arrays.copyOfRange(tokens, start, start + length), start, kv, true);
        for (int p = 0; p < length; p++) {
          assertThat(bits(part[p]))
              .as("position %d in split %s", start + p, Arrays.toString(split))
              .containsExactly(bits(whole[start + p]));
        }
        start += length;
      }
    }
    KvStore kv = ArrayKvStore.forModel(model);
    for (int p = 0; p < tokens.length; p++) {
      assertThat(bits(model.decode(tokens[p], p, kv)))
          .as("decode of position %d", p)
          .containsExactly(bits(whole[p]));
    }
  }

  @Test
  void aBatchLongerThanAChunkHasTheBitsOfShorterBatches() {
    // Past one chunk of positions, so that a layer runs the batch in two chunks.
    int[] tokens = new int[ShardPass.CHUNK + 44];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = (i * 37 + 11) % model.vocabularySize();
    }
    float[][] whole = model.forward(tokens, 0, ArrayKvStore.forModel(model), true);
    KvStore kv = ArrayKvStore.forModel(model);
    int start = 0;
    for (int length : new int[] {100, 100, 100}) {
      float[][] part =
          model.forward(Arrays.copyOfRange(tokens, start, start + length), start, kv, true);
      for (int p = 0; p < length; p++) {
        assertThat(bits(part[p]))
            .as("position %d in batches of 100", start + p)
            .containsExactly(bits(whole[start + p]));
      }
      start += length;
    }
  }

  private static int[] bits(float[] v) {
    int[] b = new int[v.length];
    for (int i = 0; i < v.length; i++) {
      b[i] = Float.floatToRawIntBits(v[i]);
    }
    return b;
  }
}
