package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** The simulator's model: what it writes it verifies, and anything else it flags. */
class PatternModelTest {
  private static final int PAGE = 4;

  private static DeviceMemory device() {
    return Providers.named(DeviceMemoryProvider.class, "sim")
        .open(
            new PoolSpec(SimulatedRank.layout(PAGE), 16, MemoryLayout.LAYER_FIRST),
            BackendContext.defaults());
  }

  private static int[] tokens(int first, int length) {
    int[] t = new int[length];
    for (int i = 0; i < length; i++) {
      t[i] = first + i;
    }
    return t;
  }

  @Test
  void pagesWrittenInChunksVerifyAndEverythingElseIsAMismatch() {
    try (DeviceMemory device = device()) {
      PatternModel model = new PatternModel(device, MultiRankSimulator.VOCAB);
      int[] prompt = tokens(100, 12);
      int[] table = {5, 9, 2};
      for (int layer = 0; layer < model.layers(); layer++) {
        model.writeLayer(new ModelStep(1, 0, prompt, 0, 5, table), layer);
      }
      for (int layer = 0; layer < model.layers(); layer++) {
        model.writeLayer(new ModelStep(1, 0, prompt, 5, 12, table), layer);
      }
      assertThat(model.verifyPrefix(new ModelStep(1, 0, prompt, 0, 12, table))).isZero();
      // The same pages read for another prefix, another namespace or in another order: wrong.
      PatternModel other = new PatternModel(device, MultiRankSimulator.VOCAB);
      int[] changed = prompt.clone();
      changed[6] = 7;
      assertThat(other.verifyPrefix(new ModelStep(2, 0, changed, 0, 12, table))).isEqualTo(2);
      assertThat(other.verifyPrefix(new ModelStep(3, 1, prompt, 0, 12, table))).isEqualTo(3);
      assertThat(other.verifyPrefix(new ModelStep(4, 0, prompt, 0, 12, new int[] {9, 5, 2})))
          .isEqualTo(2);
      // One byte of one layer of the last page flipped: that page alone.
      device.write(2, 1, 3, MemorySegment.ofArray(new byte[] {42}));
      assertThat(model.verifyPrefix(new ModelStep(1, 0, prompt, 0, 12, table))).isEqualTo(1);
    }
  }

  @Test
  void decodingIsAPureFunctionOfThePrefix() {
    try (DeviceMemory device = device()) {
      PatternModel a = new PatternModel(device, MultiRankSimulator.VOCAB);
      PatternModel b = new PatternModel(device, MultiRankSimulator.VOCAB);
      int[] prompt = tokens(7, 9);
      int next = a.nextToken(new ModelStep(1, 0, prompt, 0, 9, new int[3]));
      assertThat(b.nextToken(new ModelStep(8, 0, prompt, 0, 9, new int[3]))).isEqualTo(next);
      assertThat(next).isBetween(0, MultiRankSimulator.VOCAB - 1);
      assertThat(b.nextToken(new ModelStep(9, 0, tokens(8, 9), 0, 9, new int[3])))
          .isNotEqualTo(next);
      a.released(1);
    }
  }
}
