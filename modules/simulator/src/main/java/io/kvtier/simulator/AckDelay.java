package io.kvtier.simulator;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * How long each rank's copies take, as properties of the {@code sim} backend (namespace {@code
 * sim.}). Every batch costs a fixed latency of {@value #LATENCY_MICROS} us (the pages are tiny,
 * so bandwidth hardly matters) on a virtual tick of {@value #TICK_MICROS} us, times a per-rank
 * factor:
 *
 * <ul>
 *   <li>{@link #UNIFORM}: every rank draws each batch's duration uniformly from 1 to 9 times the
 *       latency ({@code sim.jitter=8});
 *   <li>{@link #SKEWED}: the last rank is {@value #SLOW_FACTOR} times slower ({@code
 *       sim.slow-rank}, {@code sim.slow-factor}), the others jitter by up to 2x;
 *   <li>{@link #HEAVY_TAIL}: 3% of the batches stall for 20 ticks on top of a 3x jitter ({@code
 *       sim.stall-probability}, {@code sim.stall-duration});
 *   <li>{@link #STALL}: uniform-ish copies, plus stalls injected into one rank's copy stream at
 *       seeded ticks and released a seeded number of ticks later (see {@link StallSchedule}).
 * </ul>
 */
public enum AckDelay {
  /** Jittered durations on every rank. */
  UNIFORM("uniform"),
  /** One slow rank. */
  SKEWED("skewed"),
  /** Random long stalls. */
  HEAVY_TAIL("heavy-tail"),
  /** Injected stalls released later. */
  STALL("stall");

  /** The virtual duration of one tick, in microseconds. */
  public static final long TICK_MICROS = 1000;

  /** The fixed cost of one copy batch, in microseconds. */
  public static final long LATENCY_MICROS = 50;

  /** How much slower the slow rank of {@link #SKEWED} is. */
  public static final int SLOW_FACTOR = 6;

  private final String cliName;

  AckDelay(String cliName) {
    this.cliName = cliName;
  }

  /**
   * The name on the command line.
   *
   * @return for example {@code heavy-tail}
   */
  public String cliName() {
    return cliName;
  }

  /**
   * Parses a command-line name.
   *
   * @param name {@code uniform}, {@code skewed}, {@code heavy-tail} or {@code stall}
   * @return the distribution
   * @throws IllegalArgumentException naming the accepted values
   */
  public static AckDelay parse(String name) {
    Objects.requireNonNull(name, "name");
    String n = name.strip().toLowerCase(Locale.ROOT).replace('_', '-');
    for (AckDelay d : values()) {
      if (d.cliName.equals(n)) {
        return d;
      }
    }
    throw new IllegalArgumentException(
        "unknown ack delay '"
            + name
            + "': use one of "
            + Arrays.stream(values()).map(AckDelay::cliName).toList());
  }

  /**
   * The {@code sim.*} properties of this distribution.
   *
   * @param ranks the number of ranks
   * @param seed the seed of jitter, random stalls and failures
   * @param failureProbability the chance that a copy batch fails
   * @param flipProbability the chance that a host-to-device batch finds a bit of its source
   *     flipped; the key is left out at 0, so that every earlier run keeps its properties
   * @return the properties, in a stable order
   */
  public Map<String, String> simProperties(
      int ranks, long seed, double failureProbability, double flipProbability) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("sim.seed", Long.toString(seed));
    p.put("sim.h2d-latency", LATENCY_MICROS + "us");
    p.put("sim.d2h-latency", LATENCY_MICROS + "us");
    p.put("sim.failure-probability", Double.toString(failureProbability));
    if (flipProbability > 0) {
      p.put("sim.flip-probability", Double.toString(flipProbability));
    }
    switch (this) {
      case UNIFORM -> p.put("sim.jitter", "8");
      case SKEWED -> {
        p.put("sim.jitter", "1");
        p.put("sim.slow-rank", Integer.toString(ranks - 1));
        p.put("sim.slow-factor", Integer.toString(SLOW_FACTOR));
      }
      case HEAVY_TAIL -> {
        p.put("sim.jitter", "2");
        p.put("sim.stall-probability", "0.03");
        p.put("sim.stall-duration", (20 * TICK_MICROS) + "us");
      }
      case STALL -> p.put("sim.jitter", "2");
    }
    return p;
  }

  /**
   * Whether the simulator injects stalls with a {@link StallSchedule}.
   *
   * @return true for {@link #STALL}
   */
  public boolean injectsStalls() {
    return this == STALL;
  }
}
