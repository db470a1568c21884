package io.kvtier.backend.sim;

import io.kvtier.spi.TransferDirection;
import java.util.Objects;

/**
 * When a simulated copy completes: a pure function of (config, rank, direction, sequence, bytes,
 * submit time, completion of the previous batch of that direction). It keeps no state, so the
 * engine and a test (or the multi-rank simulator) compute the same times bit for bit.
 *
 * <p>The model: a batch starts when it is submitted or when the previous batch of its direction
 * completes, whichever is later (one copy queue per direction); it takes {@code (latency + bytes
 * / bandwidth) * skew(rank) * (1 + jitter * u)} with {@code u} uniform in {@code [0, 1)}, plus
 * {@code stallDuration} when it draws a random stall. Jitter only slows a copy down, so the
 * nominal duration is a lower bound that tests can rely on. Arithmetic is IEEE double (identical
 * on every JVM) rounded to whole nanoseconds; times saturate at {@link Long#MAX_VALUE}.
 */
public final class SimTimingModel {

  private static final int STREAM_JITTER = 0;
  private static final int STREAM_FAILURE = 1;
  private static final int STREAM_STALL = 2;
  private static final int STREAMS_PER_DIRECTION = 3;

  private final SimConfig config;
  private final int rank;
  private final double skew;

  /**
   * Creates the model of one rank.
   *
   * @param config the timing parameters and seed
   * @param rank the rank, {@code >= 0}
   */
  public SimTimingModel(SimConfig config, int rank) {
    this.config = Objects.requireNonNull(config, "config");
    this.skew = config.skew(rank);
    this.rank = rank;
  }

  /**
   * The config this model reads.
   *
   * @return the config
   */
  public SimConfig config() {
    return config;
  }

  /**
   * The rank this model times.
   *
   * @return the rank
   */
  public int rank() {
    return rank;
  }

  /**
   * How long a batch takes once started.
   *
   * @param direction the direction
   * @param sequence the batch's sequence number in its direction, {@code >= 0}
   * @param bytes the bytes the batch copies, {@code >= 0}
   * @return the duration in nanoseconds, {@code >= 0}
   */
  public long durationNanos(TransferDirection direction, long sequence, long bytes) {
    Objects.requireNonNull(direction, "direction");
    if (sequence < 0 || bytes < 0) {
      throw new IllegalArgumentException(
          "sequence=" + sequence + " bytes=" + bytes + " must both be >= 0");
    }
    double nominal =
        config.latency(direction).toNanos() + bytes * 1e9 / config.bandwidth(direction);
    double u = SimRandom.unit(config.seed(), rank, stream(direction, STREAM_JITTER), sequence);
    double nanos = nominal * skew * (1.0 + config.jitter() * u);
    if (randomStall(direction, sequence)) {
      nanos += config.stallDuration().toNanos();
    }
    // Math.round saturates at Long.MAX_VALUE for huge values, which is what "never" should mean.
    return Math.round(nanos);
  }

  /**
   * When a batch completes.
   *
   * @param direction the direction
   * @param sequence the batch's sequence number
   * @param bytes the bytes the batch copies
   * @param submitNanos when it was submitted
   * @param previousCompletionNanos when the previous batch of the direction completes ({@link
   *     Long#MIN_VALUE} for the first batch)
   * @return the completion time in nanoseconds
   */
  public long completionNanos(
      TransferDirection direction,
      long sequence,
      long bytes,
      long submitNanos,
      long previousCompletionNanos) {
    long start = Math.max(submitNanos, previousCompletionNanos);
    return saturatedAdd(start, durationNanos(direction, sequence, bytes));
  }

  /**
   * Whether a batch draws a random failure ({@link SimConfig#failureProbability()}).
   *
   * @param direction the direction
   * @param sequence the batch's sequence number
   * @return true if it fails
   */
  public boolean randomFailure(TransferDirection direction, long sequence) {
    double p = config.failureProbability();
    return p > 0
        && SimRandom.unit(config.seed(), rank, stream(direction, STREAM_FAILURE), sequence) < p;
  }

  /**
   * Whether a host-to-device batch draws a random bit flip of its source ({@link
   * SimConfig#flipProbability()}); a device-to-host batch never does.
   *
   * @param direction the direction
   * @param sequence the batch's sequence number
   * @return true if one bit of its first source block is flipped before it copies
   */
  public boolean randomFlip(TransferDirection direction, long sequence) {
    double p = config.flipProbability();
    return p > 0
        && direction == TransferDirection.HOST_TO_DEVICE
        && SimRandom.unit(config.seed(), rank, flipStream(direction), sequence) < p;
  }

  /**
   * Whether a batch draws a random stall ({@link SimConfig#stallProbability()}), which adds
   * {@link SimConfig#stallDuration()} to its duration.
   *
   * @param direction the direction
   * @param sequence the batch's sequence number
   * @return true if it stalls
   */
  public boolean randomStall(TransferDirection direction, long sequence) {
    double p = config.stallProbability();
    return p > 0
        && SimRandom.unit(config.seed(), rank, stream(direction, STREAM_STALL), sequence) < p;
  }

  /**
   * Adds two times, saturating instead of wrapping.
   *
   * @param a a time
   * @param b a non-negative duration
   * @return {@code a + b}, or {@link Long#MAX_VALUE} on overflow
   */
  static long saturatedAdd(long a, long b) {
    long sum = a + b;
    return ((a ^ sum) & (b ^ sum)) < 0 ? Long.MAX_VALUE : sum;
  }

  private static int stream(TransferDirection direction, int kind) {
    return direction.ordinal() * STREAMS_PER_DIRECTION + kind;
  }

  /**
   * The flips' stream, after every direction's {@link #stream}s: numbering it among them would
   * move the other streams, and with them every draw of a run recorded before flips existed.
   */
  private static int flipStream(TransferDirection direction) {
    return TransferDirection.values().length * STREAMS_PER_DIRECTION + direction.ordinal();
  }

  @Override
  public String toString() {
    return "SimTimingModel[rank=" + rank + ", skew=" + skew + ", " + config + "]";
  }
}
