package io.kvtier.simulator;

import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.spi.TransferDirection;

/**
 * The stalls of {@link AckDelay#STALL}: a pure function of (seed, tick), so every run with the
 * same seed stalls the same copies.
 *
 * <p>Ticks are cut into periods of {@value #PERIOD} ticks. In period {@code k} one episode
 * happens: rank {@code r_k} stops completing the copies of direction {@code d_k} submitted from
 * tick {@code start_k} on ({@link FaultyTransferEngine#stall}) and lets them go at tick {@code
 * start_k + length_k} ({@link FaultyTransferEngine#release}), with {@code start_k} in the first
 * half of the period and {@code length_k} from {@value #MIN_LENGTH} to {@value #MAX_LENGTH}
 * ticks, so that episodes never overlap. The other ranks meanwhile commit nothing of that
 * direction past the stalled copies, because the MIN of the ready counts waits for the slow rank.
 * No episode starts at or after {@code lastStartTick}, so a run can drain.
 */
final class StallSchedule {
  static final int PERIOD = 40;
  static final int MIN_LENGTH = 4;
  static final int MAX_LENGTH = 19;

  private final long seed;
  private final int ranks;
  private final long lastStartTick;

  StallSchedule(long seed, int ranks, long lastStartTick) {
    this.seed = seed;
    this.ranks = ranks;
    this.lastStartTick = lastStartTick;
  }

  /** Applies what the schedule does to {@code rank} at the start of {@code tick}. */
  void apply(FaultyTransferEngine transfers, int rank, long tick) {
    long period = tick / PERIOD;
    long draw = draw(period);
    int stalledRank = (int) Long.remainderUnsigned(draw, ranks);
    if (stalledRank != rank) {
      return;
    }
    TransferDirection direction =
        (draw >>> 32 & 1) == 0
            ? TransferDirection.DEVICE_TO_HOST
            : TransferDirection.HOST_TO_DEVICE;
    long start = period * PERIOD + Long.remainderUnsigned(draw >>> 8, PERIOD / 2);
    long length = MIN_LENGTH + Long.remainderUnsigned(draw >>> 40, MAX_LENGTH - MIN_LENGTH + 1);
    if (start >= lastStartTick) {
      return;
    }
    if (tick == start) {
      transfers.stall(direction);
    } else if (tick == start + length) {
      transfers.release(direction);
    }
  }

  private long draw(long period) {
    long z = seed ^ (period + 1) * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
