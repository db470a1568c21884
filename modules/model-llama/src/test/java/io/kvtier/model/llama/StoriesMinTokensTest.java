package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.rank.MinTokens;
import io.kvtier.core.rank.Sampling;
import io.kvtier.gguf.GgufFile;
import io.kvtier.serving.Completion;
import io.kvtier.serving.ModelEngine;
import io.kvtier.serving.ModelProvider;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SharedFiles;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code min_tokens} through the engine on stories260K, whose stories end with BOS (id 1, the
 * separator of its training stories; a client that wants one story sends {@code stop_token_ids:
 * [1]}): where plain greedy decoding ends its story at token {@code k}, holding BOS and EOS back
 * for {@code k + 8} tokens keeps every token before {@code k}, takes the model's second most likely
 * token at {@code k}, and equals a direct decode ({@link LlamaModel}) that bans them from its rows
 * the textbook way until then, token for token. From the cache, speculated and on two ranks, the
 * same tokens.
 */
@Timeout(120)
class StoriesMinTokensTest {
  private static final int BUDGET = 300;
  private static final int MORE = 8;

  @Test
  void holdingEosBackContinuesTheStoryAsADirectDecodeThatBansIt() throws Exception {
    Path path = SharedFiles.require(StoriesGreedyTest.STORIES);
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      assertThat(model.text().endOfGeneration()).containsExactly(2);
      Set<Integer> ending = Set.of(1, 2);
      int[] prompt = model.text().encode("Once upon a time, there was a little cat.");
      try (ModelEngine engine =
          ModelEngine.open(model, StoriesPenaltiesTest.config(model, 1), BackendMetrics.NOOP)) {
        Completion plain = engine.generate(prompt, BUDGET, Sampling.GREEDY.withLogprobs(2));
        int k = firstOf(plain.tokens(), ending);
        assertThat(k).as("plain greedy ends its story within %d tokens", BUDGET).isPositive();
        int min = k + MORE;
        int tokens = min + MORE;
        int[] reference;
        try (GgufFile file = GgufFile.open(path)) {
          reference = direct(LlamaModel.of(file), prompt, tokens, min, ending);
        }
        Sampling held = Sampling.GREEDY.withMinTokens(MinTokens.of(min, ending));
        int[] served = engine.generate(prompt, tokens, held).tokens();
        assertThat(served).containsExactly(reference);
        assertThat(Arrays.copyOf(served, k)).containsExactly(Arrays.copyOf(plain.tokens(), k));
        assertThat(served[k])
            .as("the model's second most likely token where it ended")
            .isEqualTo(plain.logprobs().get(k).topTokens()[1]);
        assertThat(firstOf(Arrays.copyOf(served, min), ending))
            .as("no end before min")
            .isEqualTo(-1);
        assertThat(engine.generate(prompt, tokens, held).tokens())
            .as("from the cache")
            .containsExactly(reference);
        StoriesPenaltiesTest.speculatedAndOnTwoRanks(
            model,
            prompt,
            tokens,
            held,
            reference,
            "speculated: the draft may propose the end, the target holds it back");
      }
    }
  }

  private static int firstOf(int[] tokens, Set<Integer> ids) {
    for (int i = 0; i < tokens.length; i++) {
      if (ids.contains(tokens[i])) {
        return i;
      }
    }
    return -1;
  }

  /** Greedy decoding of {@code prompt} whose rows ban {@code ending} for the first {@code min}. */
  private static int[] direct(
      LlamaModel model, int[] prompt, int tokens, int min, Set<Integer> ending) {
    KvStore kv = ArrayKvStore.forModel(model);
    int[] out = new int[tokens];
    float[] logits = null;
    for (int i = 0; i < prompt.length; i++) {
      logits = model.decode(prompt[i], i, kv);
    }
    for (int g = 0; g < tokens; g++) {
      float[] row = logits.clone();
      if (g < min) {
        for (int t : ending) {
          row[t] = Float.NEGATIVE_INFINITY;
        }
      }
      out[g] = StoriesGreedyTest.argmax(row);
      if (g + 1 < tokens) {
        logits = model.decode(out[g], prompt.length + g, kv);
      }
    }
    return out;
  }
}
