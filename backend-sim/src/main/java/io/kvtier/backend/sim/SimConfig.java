package io.kvtier.backend.sim;

import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.config.ConfigParser;
import io.kvtier.spi.config.ConfigReader;
import io.kvtier.spi.config.ConfigValues;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.stream.Collectors;

/**
 * The typed configuration of the simulated backend, namespace {@code sim.}: the transfer timing
 * model (bandwidth and latency per direction, per-rank skew, jitter), the seed, and random
 * stalls and failures. The {@code sim} device and host pools and the {@code local} collective
 * share it.
 *
 * <p>A copy of {@code bytes} in one direction takes {@code (latency + bytes / bandwidth) *
 * skew(rank) * (1 + jitter * u)} with {@code u} in {@code [0, 1)} drawn from the seed, the rank,
 * the direction and the batch's sequence number; see {@link SimTimingModel}.
 *
 * @param h2dBandwidth host-to-device bytes per second ({@value #H2D_BANDWIDTH})
 * @param d2hBandwidth device-to-host bytes per second ({@value #D2H_BANDWIDTH})
 * @param h2dLatency fixed cost of one host-to-device batch ({@value #H2D_LATENCY})
 * @param d2hLatency fixed cost of one device-to-host batch ({@value #D2H_LATENCY})
 * @param rankSkew duration multiplier per rank, index = rank; ranks past the end use 1
 *     ({@value #RANK_SKEW}, comma separated)
 * @param slowRank a rank whose durations are further multiplied by {@code slowFactor} ({@value
 *     #SLOW_RANK})
 * @param slowFactor the multiplier of the slow rank ({@value #SLOW_FACTOR})
 * @param jitter relative jitter, at least 0: a duration grows by up to this fraction ({@value
 *     #JITTER})
 * @param seed the master seed of jitter, random stalls and random failures ({@value #SEED})
 * @param stallProbability probability that a batch stalls for {@code stallDuration} on top of
 *     its duration ({@value #STALL_PROBABILITY})
 * @param stallDuration how long a random stall lasts ({@value #STALL_DURATION})
 * @param failureProbability probability that a batch fails ({@value #FAILURE_PROBABILITY})
 * @param flipProbability probability that a host-to-device batch finds one bit of its first
 *     source block flipped before it copies: the host tier corrupted at rest, which the copy does
 *     not notice and only a cache that checks what it restores can ({@value #FLIP_PROBABILITY})
 */
public record SimConfig(
    long h2dBandwidth,
    long d2hBandwidth,
    Duration h2dLatency,
    Duration d2hLatency,
    List<Double> rankSkew,
    OptionalInt slowRank,
    double slowFactor,
    double jitter,
    long seed,
    double stallProbability,
    Duration stallDuration,
    double failureProbability,
    double flipProbability) {

  /** The namespace of every key, without the dot. */
  public static final String NAMESPACE = "sim";

  /** Key of {@link #h2dBandwidth()}. */
  public static final String H2D_BANDWIDTH = "sim.h2d-bandwidth";

  /** Key of {@link #d2hBandwidth()}. */
  public static final String D2H_BANDWIDTH = "sim.d2h-bandwidth";

  /** Key of {@link #h2dLatency()}. */
  public static final String H2D_LATENCY = "sim.h2d-latency";

  /** Key of {@link #d2hLatency()}. */
  public static final String D2H_LATENCY = "sim.d2h-latency";

  /** Key of {@link #rankSkew()}. */
  public static final String RANK_SKEW = "sim.rank-skew";

  /** Key of {@link #slowRank()}. */
  public static final String SLOW_RANK = "sim.slow-rank";

  /** Key of {@link #slowFactor()}. */
  public static final String SLOW_FACTOR = "sim.slow-factor";

  /** Key of {@link #jitter()}. */
  public static final String JITTER = "sim.jitter";

  /** Key of {@link #seed()}. */
  public static final String SEED = "sim.seed";

  /** Key of {@link #stallProbability()}. */
  public static final String STALL_PROBABILITY = "sim.stall-probability";

  /** Key of {@link #stallDuration()}. */
  public static final String STALL_DURATION = "sim.stall-duration";

  /** Key of {@link #failureProbability()}. */
  public static final String FAILURE_PROBABILITY = "sim.failure-probability";

  /** Key of {@link #flipProbability()}. */
  public static final String FLIP_PROBABILITY = "sim.flip-probability";

  /** Every key this config knows, in documentation order. */
  public static final List<String> KEYS =
      List.of(
          H2D_BANDWIDTH,
          D2H_BANDWIDTH,
          H2D_LATENCY,
          D2H_LATENCY,
          RANK_SKEW,
          SLOW_RANK,
          SLOW_FACTOR,
          JITTER,
          SEED,
          STALL_PROBABILITY,
          STALL_DURATION,
          FAILURE_PROBABILITY,
          FLIP_PROBABILITY);

  /** Default of {@link #h2dBandwidth()}: 25 GB/s, a PCIe 4.0 x16 link in practice. */
  public static final long DEFAULT_H2D_BANDWIDTH = 25_000_000_000L;

  /** Default of {@link #d2hBandwidth()}: 25 GB/s. */
  public static final long DEFAULT_D2H_BANDWIDTH = 25_000_000_000L;

  /** Default of {@link #h2dLatency()}: 5 microseconds per batch. */
  public static final Duration DEFAULT_H2D_LATENCY = Duration.ofNanos(5_000);

  /** Default of {@link #d2hLatency()}: 5 microseconds per batch. */
  public static final Duration DEFAULT_D2H_LATENCY = Duration.ofNanos(5_000);

  /** Default of {@link #rankSkew()}: every rank at speed 1. */
  public static final List<Double> DEFAULT_RANK_SKEW = List.of();

  /** Default of {@link #slowRank()}: none. */
  public static final OptionalInt DEFAULT_SLOW_RANK = OptionalInt.empty();

  /** Default of {@link #slowFactor()}: 4, applied only when a slow rank is set. */
  public static final double DEFAULT_SLOW_FACTOR = 4.0;

  /** Default of {@link #jitter()}: none. */
  public static final double DEFAULT_JITTER = 0.0;

  /** Default of {@link #seed()}. */
  public static final long DEFAULT_SEED = 0L;

  /** Default of {@link #stallProbability()}: never. */
  public static final double DEFAULT_STALL_PROBABILITY = 0.0;

  /** Default of {@link #stallDuration()}: 10 milliseconds. */
  public static final Duration DEFAULT_STALL_DURATION = Duration.ofMillis(10);

  /** Default of {@link #failureProbability()}: never. */
  public static final double DEFAULT_FAILURE_PROBABILITY = 0.0;

  /** Default of {@link #flipProbability()}: never. */
  public static final double DEFAULT_FLIP_PROBABILITY = 0.0;

  /** The configuration with every default. */
  public static final SimConfig DEFAULTS =
      new SimConfig(
          DEFAULT_H2D_BANDWIDTH,
          DEFAULT_D2H_BANDWIDTH,
          DEFAULT_H2D_LATENCY,
          DEFAULT_D2H_LATENCY,
          DEFAULT_RANK_SKEW,
          DEFAULT_SLOW_RANK,
          DEFAULT_SLOW_FACTOR,
          DEFAULT_JITTER,
          DEFAULT_SEED,
          DEFAULT_STALL_PROBABILITY,
          DEFAULT_STALL_DURATION,
          DEFAULT_FAILURE_PROBABILITY,
          DEFAULT_FLIP_PROBABILITY);

  /** Reads the {@code sim.*} keys; {@link #fromProperties} and the config tests use it. */
  public static final ConfigParser<SimConfig> PARSER = ConfigParser.of(NAMESPACE, SimConfig::read);

  /** Validates and copies the fields. */
  public SimConfig {
    positive(H2D_BANDWIDTH, h2dBandwidth);
    positive(D2H_BANDWIDTH, d2hBandwidth);
    notNegative(H2D_LATENCY, h2dLatency);
    notNegative(D2H_LATENCY, d2hLatency);
    rankSkew = List.copyOf(Objects.requireNonNull(rankSkew, "rankSkew"));
    for (int rank = 0; rank < rankSkew.size(); rank++) {
      double skew = rankSkew.get(rank);
      if (!(skew > 0) || Double.isInfinite(skew)) {
        throw new IllegalArgumentException(
            RANK_SKEW + " entry " + rank + " is " + skew + ": every skew must be finite and > 0");
      }
    }
    Objects.requireNonNull(slowRank, "slowRank");
    if (slowRank.isPresent() && slowRank.getAsInt() < 0) {
      throw new IllegalArgumentException(
          SLOW_RANK + "=" + slowRank.getAsInt() + " must be a rank >= 0");
    }
    if (!(slowFactor > 0) || Double.isInfinite(slowFactor)) {
      throw new IllegalArgumentException(
          SLOW_FACTOR + "=" + slowFactor + " must be finite and > 0");
    }
    if (!(jitter >= 0) || Double.isInfinite(jitter)) {
      throw new IllegalArgumentException(JITTER + "=" + jitter + " must be finite and >= 0");
    }
    probability(STALL_PROBABILITY, stallProbability);
    notNegative(STALL_DURATION, stallDuration);
    probability(FAILURE_PROBABILITY, failureProbability);
    probability(FLIP_PROBABILITY, flipProbability);
  }

  /**
   * Parses the {@code sim.*} keys of a property map; keys of other namespaces are ignored, keys
   * not set keep their default.
   *
   * @param properties full keys (for example {@code sim.h2d-bandwidth}) to raw values
   * @return the config
   * @throws IllegalArgumentException for an unknown {@code sim.*} key (naming the closest and
   *     listing the known keys) or a bad value (naming the key and the value)
   */
  public static SimConfig fromProperties(Map<String, String> properties) {
    return PARSER.parse(properties);
  }

  private static SimConfig read(ConfigReader r) {
    return new SimConfig(
        r.getRate(H2D_BANDWIDTH, DEFAULT_H2D_BANDWIDTH),
        r.getRate(D2H_BANDWIDTH, DEFAULT_D2H_BANDWIDTH),
        r.getDuration(H2D_LATENCY, DEFAULT_H2D_LATENCY),
        r.getDuration(D2H_LATENCY, DEFAULT_D2H_LATENCY),
        r.get(RANK_SKEW, SimConfig::parseSkews).orElse(DEFAULT_RANK_SKEW),
        r.get(SLOW_RANK, SimConfig::parseSlowRank).orElse(DEFAULT_SLOW_RANK),
        r.getDouble(SLOW_FACTOR, DEFAULT_SLOW_FACTOR),
        r.getDouble(JITTER, DEFAULT_JITTER),
        r.getLong(SEED, DEFAULT_SEED),
        r.getDouble(STALL_PROBABILITY, DEFAULT_STALL_PROBABILITY),
        r.getDuration(STALL_DURATION, DEFAULT_STALL_DURATION),
        r.getDouble(FAILURE_PROBABILITY, DEFAULT_FAILURE_PROBABILITY),
        r.getDouble(FLIP_PROBABILITY, DEFAULT_FLIP_PROBABILITY));
  }

  /**
   * This config with one key set to a new raw value, for tests and the simulator.
   *
   * @param key a key of {@link #KEYS}
   * @param value the raw value, as in a property file
   * @return the new config
   */
  public SimConfig with(String key, String value) {
    Map<String, String> properties = new LinkedHashMap<>(toProperties());
    properties.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
    return fromProperties(properties);
  }

  /**
   * Every key with its value, in a form that {@link #fromProperties} reads back to an equal
   * config. An absent slow rank is the empty string.
   *
   * @return key to raw value, in {@link #KEYS} order
   */
  public Map<String, String> toProperties() {
    Map<String, String> out = new LinkedHashMap<>();
    out.put(H2D_BANDWIDTH, Long.toString(h2dBandwidth));
    out.put(D2H_BANDWIDTH, Long.toString(d2hBandwidth));
    out.put(H2D_LATENCY, ConfigValues.formatDuration(h2dLatency));
    out.put(D2H_LATENCY, ConfigValues.formatDuration(d2hLatency));
    out.put(RANK_SKEW, rankSkew.stream().map(String::valueOf).collect(Collectors.joining(",")));
    out.put(SLOW_RANK, slowRank.isPresent() ? Integer.toString(slowRank.getAsInt()) : "");
    out.put(SLOW_FACTOR, Double.toString(slowFactor));
    out.put(JITTER, Double.toString(jitter));
    out.put(SEED, Long.toString(seed));
    out.put(STALL_PROBABILITY, Double.toString(stallProbability));
    out.put(STALL_DURATION, ConfigValues.formatDuration(stallDuration));
    out.put(FAILURE_PROBABILITY, Double.toString(failureProbability));
    out.put(FLIP_PROBABILITY, Double.toString(flipProbability));
    return out;
  }

  /**
   * The bandwidth of a direction.
   *
   * @param direction the direction
   * @return bytes per second
   */
  public long bandwidth(TransferDirection direction) {
    return direction == TransferDirection.HOST_TO_DEVICE ? h2dBandwidth : d2hBandwidth;
  }

  /**
   * The per-batch latency of a direction.
   *
   * @param direction the direction
   * @return the latency
   */
  public Duration latency(TransferDirection direction) {
    return direction == TransferDirection.HOST_TO_DEVICE ? h2dLatency : d2hLatency;
  }

  /**
   * The duration multiplier of a rank: its {@link #rankSkew()} entry (1 past the end), times
   * {@link #slowFactor()} if it is the {@link #slowRank()}.
   *
   * @param rank the rank, {@code >= 0}
   * @return the multiplier, {@code > 0}
   */
  public double skew(int rank) {
    if (rank < 0) {
      throw new IllegalArgumentException("rank=" + rank + " must be >= 0");
    }
    double skew = rank < rankSkew.size() ? rankSkew.get(rank) : 1.0;
    if (slowRank.isPresent() && slowRank.getAsInt() == rank) {
      skew *= slowFactor;
    }
    return skew;
  }

  private static List<Double> parseSkews(String value) {
    List<Double> skews = new ArrayList<>();
    if (value.isBlank()) {
      return skews;
    }
    for (String part : value.split(",", -1)) {
      double skew;
      try {
        skew = ConfigValues.parseDouble(RANK_SKEW, part);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            RANK_SKEW
                + "='"
                + value
                + "' has entry '"
                + part.strip()
                + "', which is not a"
                + " number: write decimals separated by commas, for example 1,1,3,1",
            e);
      }
      if (!(skew > 0) || Double.isInfinite(skew)) {
        throw new IllegalArgumentException(
            RANK_SKEW
                + "="
                + value
                + " has entry "
                + part.strip()
                + ": every skew must be finite and > 0, for example 1,1,3,1");
      }
      skews.add(skew);
    }
    return skews;
  }

  private static OptionalInt parseSlowRank(String value) {
    if (value.isBlank()) {
      return OptionalInt.empty();
    }
    int rank = ConfigValues.parseInt(SLOW_RANK, value);
    if (rank < 0) {
      throw new IllegalArgumentException(SLOW_RANK + "=" + value + " must be a rank >= 0");
    }
    return OptionalInt.of(rank);
  }

  private static void positive(String key, long value) {
    if (value < 1) {
      throw new IllegalArgumentException(key + "=" + value + " must be >= 1 byte per second");
    }
  }

  private static void notNegative(String key, Duration value) {
    Objects.requireNonNull(value, key);
    if (value.isNegative()) {
      throw new IllegalArgumentException(key + "=" + value + " must not be negative");
    }
    // The timing model counts in nanoseconds; the parser accepts longer durations (days).
    try {
      value.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          key
              + "="
              + ConfigValues.formatDuration(value)
              + " is longer than the simulated clock"
              + " counts: at most "
              + Long.MAX_VALUE
              + "ns (about 292 years)",
          e);
    }
  }

  private static void probability(String key, double value) {
    if (!(value >= 0 && value <= 1)) {
      throw new IllegalArgumentException(key + "=" + value + " must be a probability in [0, 1]");
    }
  }
}
