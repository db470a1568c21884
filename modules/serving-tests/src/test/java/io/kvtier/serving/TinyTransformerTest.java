package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.model.tiny.ArrayKv;
import io.kvtier.model.tiny.ForwardPass;
import io.kvtier.model.tiny.LayerGate;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.testkit.SeedExtension;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The tiny transformer alone: determinism, chunking invariance, context sensitivity. */
@ExtendWith(SeedExtension.class)
class TinyTransformerTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);

  @Test
  void theSameSeedGivesTheSameOutputAndAnotherSeedAnother(Random random) {
    int[] prompt = TinyPrompts.tokens(random, 40, 512);
    int[] first = new NoCacheRunner(MODEL).generate(prompt, 12);
    int[] again = new NoCacheRunner(new TinyTransformer(ModelConfig.DEFAULTS)).generate(prompt, 12);
    int[] other =
        new NoCacheRunner(new TinyTransformer(ModelConfig.DEFAULTS.withSeed(7)))
            .generate(prompt, 12);

    assertThat(again).containsExactly(first);
    assertThat(other).isNotEqualTo(first);
    assertThat(Arrays.stream(first).allMatch(t -> t >= 0 && t < 512)).isTrue();
  }

  /**
   * What makes a cache valid: computing a prompt in any chunks, the later ones reading the KV the
   * earlier ones wrote, gives the same bits as computing it at once.
   */
  @Test
  void chunkedPrefillEqualsOneShotPrefill(Random random) throws InterruptedException {
    ForwardPass pass = MODEL.newForwardPass();
    for (int round = 0; round < 10; round++) {
      int[] prompt = TinyPrompts.tokens(random, 2 + random.nextInt(120), 512);
      int whole =
          pass.forward(prompt, 0, prompt.length, new ArrayKv(MODEL.config()), LayerGate.OPEN);

      ArrayKv kv = new ArrayKv(MODEL.config());
      int from = 0;
      int next = -1;
      while (from < prompt.length) {
        int to = from + 1 + random.nextInt(prompt.length - from);
        next = pass.forward(prompt, from, to, kv, LayerGate.OPEN);
        from = to;
      }
      assertThat(next).as("prompt %s", Arrays.toString(prompt)).isEqualTo(whole);
    }
  }

  @Test
  void outputsDependOnEarlyContext(Random random) {
    NoCacheRunner runner = new NoCacheRunner(MODEL);
    int differ = 0;
    int rounds = 20;
    for (int round = 0; round < rounds; round++) {
      int[] prompt = TinyPrompts.tokens(random, 60, 512);
      int[] changed = prompt.clone();
      changed[random.nextInt(10)] = (prompt[0] + 1 + random.nextInt(511)) % 512;
      if (!Arrays.equals(runner.generate(prompt, 8), runner.generate(changed, 8))) {
        differ++;
      }
    }
    // Attention must carry early tokens to the output, or a wrong cached KV would go unseen.
    assertThat(differ).isGreaterThan(rounds / 2);
  }

  @Test
  void badRequestsAreRejectedWithTheirValue() {
    assertThatThrownBy(() -> MODEL.checkRequest(new int[0], 1, 100)).hasMessageContaining("empty");
    assertThatThrownBy(() -> MODEL.checkRequest(new int[] {1}, 0, 100))
        .hasMessageContaining("max_tokens=0");
    assertThatThrownBy(() -> MODEL.checkRequest(new int[] {1, 512}, 1, 100))
        .hasMessageContaining("token 512 at index 1");
    assertThatThrownBy(() -> MODEL.checkRequest(new int[] {1, -3}, 1, 100))
        .hasMessageContaining("token -3 at index 1");
    assertThatThrownBy(() -> MODEL.checkRequest(new int[90], 11, 100))
        .hasMessageContaining("101 tokens exceeds the context limit of 100");
    assertThatThrownBy(() -> new ModelConfig(512, 2, 4, 15, 128, 1024, 1))
        .hasMessageContaining("headDim=15 must be even");
  }
}
