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
import java.util.List;
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

  /** Runs every layer of one step. */
  private static void step(PatternModel model, ModelStep step) {
    for (int layer = 0; layer < model.layers(); layer++) {
      model.writeLayer(step, layer);
    }
  }

  private static ModelStep step(
      long id, int[] tokens, int from, int to, int[] table, int[] resume, ModelStep.Snapshot... s) {
    return new ModelStep(id, 0, tokens, from, to, table, resume, List.of(s));
  }

  /**
   * Request 1 computes a 12-token prompt in two chunks and snapshots its state at 4 (slot 10)
   * and at 8 (slot 11); the model that writes them is the one that reads them, as on a rank.
   */
  private static PatternModel writer(DeviceMemory device, int[] prompt) {
    PatternModel model = new PatternModel(device, MultiRankSimulator.VOCAB, 1);
    int[] table = {5, 9, 2};
    step(
        model, step(1, prompt, 0, 6, table, new int[0], new ModelStep.Snapshot(4, new int[] {10})));
    step(
        model,
        step(1, prompt, 6, 12, table, new int[0], new ModelStep.Snapshot(8, new int[] {11})));
    assertThat(model.snapshotsWritten()).isEqualTo(2);
    assertThat(model.snapshotsVerified()).isZero();
    return model;
  }

  @Test
  void aResumeFromTheRightSnapshotVerifiesAndAWrongOneIsAMismatch() {
    try (DeviceMemory device = device()) {
      int[] prompt = tokens(100, 12);
      PatternModel model = writer(device, prompt);
      int[] table = {5, 9, 2};
      // Request 2 shares the prompt and resumes at 8 from slot 11: right.
      step(model, step(2, prompt, 8, 10, table, new int[] {11}));
      assertThat(model.snapshotsVerified()).isEqualTo(1);
      assertThat(model.snapshotMismatches()).isZero();
      // Its later steps carry no resume slots and are not checked again.
      step(model, step(2, prompt, 10, 12, table, new int[0]));
      assertThat(model.snapshotsVerified()).isEqualTo(1);
      // Slot 10 holds the state at 4, not at 8: resuming at 8 from it is another state.
      step(model, step(3, prompt, 8, 12, table, new int[] {10}));
      assertThat(model.snapshotMismatches()).isEqualTo(1);
      // Another prefix (one token changed before 8) resumed from slot 11: another state.
      int[] changed = prompt.clone();
      changed[2] = 7;
      step(model, step(4, changed, 8, 12, table, new int[] {11}));
      assertThat(model.snapshotMismatches()).isEqualTo(2);
      // The same tokens in another namespace: another state.
      ModelStep otherNamespace =
          new ModelStep(5, 1, prompt, 8, 12, table, new int[] {11}, List.of());
      step(model, otherNamespace);
      assertThat(model.snapshotMismatches()).isEqualTo(3);
      assertThat(model.snapshotsVerified()).isEqualTo(4);
    }
  }

  @Test
  void oneCorruptByteOfOneLayerOfTheSlotIsAMismatchCountedOnce() {
    try (DeviceMemory device = device()) {
      int[] prompt = tokens(100, 12);
      PatternModel model = writer(device, prompt);
      int[] table = {5, 9, 2};
      device.write(11, 1, 17, MemorySegment.ofArray(new byte[] {42}));
      step(model, step(2, prompt, 8, 12, table, new int[] {11}));
      assertThat(model.snapshotsVerified()).isEqualTo(1);
      assertThat(model.snapshotMismatches()).isEqualTo(1);
      // Slot 10 is intact: a resume at 4 from it still verifies.
      step(model, step(3, prompt, 4, 12, table, new int[] {10}));
      assertThat(model.snapshotMismatches()).isEqualTo(1);
    }
  }

  @Test
  void twoSwappedSnapshotsAreTwoMismatches() {
    try (DeviceMemory device = device()) {
      int[] first = tokens(100, 12);
      int[] second = tokens(300, 12);
      PatternModel model = writer(device, first);
      int[] table = {5, 9, 2};
      // Another conversation snapshots at 8 into slot 12.
      step(
          model,
          step(
              6,
              second,
              0,
              12,
              new int[] {1, 3, 4},
              new int[0],
              new ModelStep.Snapshot(8, new int[] {12})));
      // Each resumes from the other's slot: another request's state, both wrong.
      step(model, step(7, first, 8, 12, table, new int[] {12}));
      step(model, step(8, second, 8, 12, new int[] {1, 3, 4}, new int[] {11}));
      assertThat(model.snapshotMismatches()).isEqualTo(2);
      // The right way round both verify.
      step(model, step(9, first, 8, 12, table, new int[] {11}));
      step(model, step(10, second, 8, 12, new int[] {1, 3, 4}, new int[] {12}));
      assertThat(model.snapshotMismatches()).isEqualTo(2);
      assertThat(model.snapshotsVerified()).isEqualTo(4);
    }
  }

  @Test
  void aResumeWithoutItsSlotsOrSlotsOnALaterStepIsAMismatch() {
    try (DeviceMemory device = device()) {
      int[] prompt = tokens(100, 12);
      PatternModel model = writer(device, prompt);
      int[] table = {5, 9, 2};
      // A first step at 8 with no state to start from.
      step(model, step(2, prompt, 8, 12, table, new int[0]));
      assertThat(model.snapshotMismatches()).isEqualTo(1);
      // Resume slots on a request's second step: the engine and the model disagree.
      step(model, step(3, prompt, 0, 4, table, new int[0]));
      step(model, step(3, prompt, 4, 8, table, new int[] {10}));
      assertThat(model.snapshotMismatches()).isEqualTo(2);
      // Resume slots on a first step from 0.
      step(model, step(4, prompt, 0, 4, table, new int[] {10}));
      assertThat(model.snapshotMismatches()).isEqualTo(3);
      // A released request starts over: its next first step is checked again.
      model.released(2);
      step(model, step(2, prompt, 8, 12, table, new int[] {11}));
      assertThat(model.snapshotMismatches()).isEqualTo(3);
      assertThat(model.snapshotsVerified()).isEqualTo(4);
    }
  }

  @Test
  void withoutSnapshotsNothingIsCheckedAndNoSlotIsAsked() {
    try (DeviceMemory device = device()) {
      PatternModel model = new PatternModel(device, MultiRankSimulator.VOCAB);
      assertThat(model.snapshotSlots()).isZero();
      int[] prompt = tokens(100, 12);
      // A first step from 8 is a full-attention model's resume: nothing to check.
      step(model, new ModelStep(2, 0, prompt, 8, 12, new int[] {5, 9, 2}));
      assertThat(model.snapshotsVerified()).isZero();
      assertThat(model.snapshotMismatches()).isZero();
    }
  }
}
