package io.kvtier.simulator;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.LayerMix;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.LoadFailurePolicy;
import io.kvtier.core.rank.ProtocolDefect;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * One run of the {@link MultiRankSimulator}. Build it with {@link #builder()}; every field has a
 * default (those of {@code kvtier simulate} without arguments).
 *
 * @param ranks ranks, 1 to 8; each is a thread with its own cache, pools and copy engine
 * @param device the provider of the device and host pools: {@code sim} (virtual time, the copy
 *     delays of {@code ackDelay}), {@code asserting} (io.kvtier.asserting's checking wrapper
 *     around {@code sim}: a copy from a freed page or a double free fails at once), or another
 *     provider on the module path such as {@code cuda} (real copy times: not deterministic)
 * @param workload a {@link io.kvtier.simulator.workload.Workloads#parse} spec; a generator spec
 *     without {@code seed=} gets the run's seed
 * @param requests the most requests taken from the workload, 0 for all
 * @param pageSize tokens per page
 * @param devicePages device pool pages per rank
 * @param hostRatio host pool size relative to the device pool, above 1, or 0 for no host tier
 * @param writePolicy when device pages are backed up
 * @param eviction the eviction policy of both tiers
 * @param ackDelay the per-rank copy delay distribution
 * @param failureProbability the chance that a copy batch fails, 0 to 1
 * @param flipProbability the chance that a host-to-device batch finds one bit of its source host
 *     page flipped (the host tier corrupted at rest; {@code sim.flip-probability}), 0 to 1
 * @param abortProbability the chance per tick that rank 0 aborts one live request, 0 to 1
 * @param chunkTokens prompt tokens a request prefills per tick
 * @param maxRunning requests running at once per rank
 * @param maxPrefillTokens prompt tokens all running requests together prefill per tick ({@link
 *     io.kvtier.core.rank.RankEngineConfig#maxPrefillTokens()}), {@link
 *     io.kvtier.core.rank.RankEngineConfig#NO_PREFILL_BUDGET} for no budget
 * @param arrivalsPerTick the most requests rank 0 lets arrive per tick
 * @param digestInterval ticks between the engine's in-band digest checks, 0 for none (the
 *     simulator's own check after every tick runs regardless)
 * @param ticks the ticks during which requests arrive; then the input ends and the run drains
 * @param seed the seed of everything random: workload, copy timing, stalls, aborts
 * @param watchdog how long one collective call may wait (wall clock) before it fails
 * @param protocolDefect a deliberate break of the rank protocol, for tests
 * @param cacheDefect a deliberate break of a cache rule, for tests
 * @param collective the collective provider that joins the ranks: {@code local} (every rank a
 *     thread of this JVM, the default), or one that joins ranks in separate processes such as
 *     {@code mpi} or {@code hazelcast} (then each process runs one rank with {@link
 *     MultiRankSimulator#runRank})
 * @param collectiveProperties settings of the collective provider, full keys such as {@code
 *     hazelcast.port} or {@code mpi.inline-longs}; they join the {@code sim.*} keys in the
 *     collective's {@link io.kvtier.spi.BackendContext}, so they may not use the {@code sim}
 *     namespace
 * @param l3 the L3 tier: which store each rank opens, its timing and faults; {@link
 *     L3Simulation#NONE} for none
 * @param rankFailure a failure injected into one rank's step, to check that the group fails
 *     together ({@link SimulationFailure#RANK_FAILED}); {@link RankFailureInjection#NONE} for
 *     none
 * @param fullCheckInterval every how many ticks each rank runs the full {@link
 *     io.kvtier.core.cache.CacheInvariants#check} (and verifies its incremental digest) instead
 *     of the incremental {@code checkChanged} alone: the bound, in ticks, within which a broken
 *     rule that only the full check sees (a slot owned twice, a free list, a key store view, a
 *     change no room marked) is caught; 1 checks everything after every tick (default {@value
 *     #DEFAULT_FULL_CHECK_INTERVAL})
 * @param skipIdleTicks whether rank 0 skips the ticks in which nothing is outstanding and
 *     nothing arrives ({@link io.kvtier.core.rank.TickCommands#skippedTicks()}); the engine's
 *     decisions are the same either way, only the collective calls and the tick counters of the
 *     skipped ticks are left out (default true)
 * @param layerMix the model's layer mix as {@code kvtier simulate --layer-mix} parsed it, or
 *     empty for all full attention (the default; a mix of full layers only becomes empty): it
 *     enters the L3 model id of a mix and the reports; what the cache does for it is {@code
 *     snapshotSlots}
 * @param snapshotSlots page slots of one recurrent-state snapshot (HYBRID.md §5, {@code
 *     kvtier.snapshot-slots}): 1 for a mix with a recurrent layer, 0 without (the default:
 *     every decision the all-full-attention one); below {@code devicePages}
 * @param snapshotIntervalPages pages between two interval snapshots ({@code
 *     kvtier.snapshot-interval-pages}), at least 1; read only when {@code snapshotSlots > 0}
 * @param windowedSwa {@code kvtier simulate --swa-cache windows} (docs/HYBRID.md §4, §8): the
 *     mix's SWA layers keep their KV as windows in the snapshots instead of in every page, so a
 *     match is usable only at a snapshot and {@code snapshotSlots} counts the windows' slots; it
 *     enters the L3 model id ({@code -swa-windows}) and the reports. The pools keep {@link
 *     #kvLayout()} either way. Needs {@code snapshotSlots > 0} and a layer mix.
 * @param onLoadFailure what a request whose load-back failed does: go back to the queue and
 *     recompute (the default) or end with {@code LOAD_FAILED} ({@code --on-load-failure})
 * @param cacheChunks whether a request's computed prompt pages join the cache after each prefill
 *     step, its last included (the default, {@link
 *     io.kvtier.core.rank.RankEngineConfig#cacheChunks()}, which also has a request that shares
 *     a running prompt wait for its step), or only when it finishes ({@code --insert-at-finish})
 */
public record SimulationConfig(
    int ranks,
    String device,
    String workload,
    int requests,
    int pageSize,
    int devicePages,
    double hostRatio,
    WritePolicy writePolicy,
    EvictionPolicy eviction,
    AckDelay ackDelay,
    double failureProbability,
    double flipProbability,
    double abortProbability,
    int chunkTokens,
    int maxRunning,
    int maxPrefillTokens,
    int arrivalsPerTick,
    int digestInterval,
    int ticks,
    long seed,
    Duration watchdog,
    ProtocolDefect protocolDefect,
    CacheDefect cacheDefect,
    String collective,
    Map<String, String> collectiveProperties,
    L3Simulation l3,
    RankFailureInjection rankFailure,
    int fullCheckInterval,
    boolean skipIdleTicks,
    Optional<LayerMix> layerMix,
    int snapshotSlots,
    int snapshotIntervalPages,
    boolean windowedSwa,
    LoadFailurePolicy onLoadFailure,
    boolean cacheChunks) {

  /** The default of {@link #fullCheckInterval()}. */
  public static final int DEFAULT_FULL_CHECK_INTERVAL = 1000;

  /** The collective of a run that does not name one: every rank a thread of this JVM. */
  public static final String LOCAL_COLLECTIVE = "local";

  /** The default of {@link #snapshotIntervalPages()}: CacheConfig's. */
  public static final int DEFAULT_SNAPSHOT_INTERVAL_PAGES = 8;

  /** The most ranks a run may have. */
  public static final int MAX_RANKS = 8;

  /** The workload of {@code kvtier simulate} without arguments: small multi-turn chats. */
  public static final String DEFAULT_WORKLOAD =
      "multiturn:conversations=48,turns=4,first=96,answer=16,question=32";

  /** Validates the fields. */
  public SimulationConfig {
    if (ranks < 1 || ranks > MAX_RANKS) {
      throw new IllegalArgumentException("ranks=" + ranks + " must be between 1 and " + MAX_RANKS);
    }
    Objects.requireNonNull(device, "device");
    if (device.isBlank()) {
      throw new IllegalArgumentException("device is blank: give a provider name such as sim");
    }
    Objects.requireNonNull(workload, "workload");
    if (workload.isBlank()) {
      throw new IllegalArgumentException("workload is blank: give a spec such as multiturn");
    }
    atLeast("requests", requests, 0);
    atLeast("pageSize", pageSize, 1);
    atLeast("devicePages", devicePages, 1);
    if (!(hostRatio == 0 || hostRatio > 1) || Double.isInfinite(hostRatio)) {
      throw new IllegalArgumentException(
          "hostRatio=" + hostRatio + " must be above 1, or 0 for no host tier");
    }
    Objects.requireNonNull(writePolicy, "writePolicy");
    Objects.requireNonNull(eviction, "eviction");
    Objects.requireNonNull(ackDelay, "ackDelay");
    probability("failureProbability", failureProbability);
    probability("flipProbability", flipProbability);
    probability("abortProbability", abortProbability);
    atLeast("chunkTokens", chunkTokens, 1);
    atLeast("maxRunning", maxRunning, 1);
    atLeast("maxPrefillTokens", maxPrefillTokens, 1);
    atLeast("arrivalsPerTick", arrivalsPerTick, 1);
    atLeast("digestInterval", digestInterval, 0);
    atLeast("ticks", ticks, 1);
    atLeast("fullCheckInterval", fullCheckInterval, 1);
    Objects.requireNonNull(watchdog, "watchdog");
    if (watchdog.isNegative() || watchdog.isZero()) {
      throw new IllegalArgumentException("watchdog=" + watchdog + " must be positive");
    }
    Objects.requireNonNull(protocolDefect, "protocolDefect");
    Objects.requireNonNull(cacheDefect, "cacheDefect");
    Objects.requireNonNull(l3, "l3");
    if (l3.enabled() && hostRatio == 0) {
      throw new IllegalArgumentException(
          "an L3 store ("
              + l3.store()
              + ") needs a host tier,"
              + " which its pages pass through, but hostRatio=0: set a host ratio above 1");
    }
    if (writePolicy == WritePolicy.WRITE_BACK && hostRatio == 0) {
      throw new IllegalArgumentException(
          "writePolicy=write_back needs a host tier, but hostRatio=0: set a host ratio above 1");
    }
    Objects.requireNonNull(collective, "collective");
    if (collective.isBlank()) {
      throw new IllegalArgumentException(
          "collective is blank: give a provider name such as local, mpi or hazelcast");
    }
    collectiveProperties = checkProperties(collectiveProperties);
    layerMix = Objects.requireNonNull(layerMix, "layerMix").filter(mix -> !mix.allFull());
    atLeast("snapshotSlots", snapshotSlots, 0);
    atLeast("snapshotIntervalPages", snapshotIntervalPages, 1);
    if (snapshotSlots >= devicePages) {
      throw new IllegalArgumentException(
          "snapshotSlots="
              + snapshotSlots
              + " must be below devicePages="
              + devicePages
              + ": a snapshot takes its slots from the device pool");
    }
    if (windowedSwa && (snapshotSlots == 0 || layerMix.isEmpty())) {
      throw new IllegalArgumentException(
          "windowedSwa needs a layer mix with an SWA layer and snapshotSlots > 0 (the windows"
              + " live in the snapshots), but layerMix='"
              + layerMix.map(LayerMix::toString).orElse("")
              + "', snapshotSlots="
              + snapshotSlots);
    }
    Objects.requireNonNull(rankFailure, "rankFailure");
    if (rankFailure.rank() >= ranks) {
      throw new IllegalArgumentException(
          "rankFailure.rank="
              + rankFailure.rank()
              + " must be in [0, "
              + ranks
              + "): the rank that fails must be one of the run's ranks");
    }
  }

  /**
   * Copies the collective's properties in key order (so that equal settings give equal configs
   * and the same text), rejecting keys that would be ambiguous in the backend context.
   */
  private static Map<String, String> checkProperties(Map<String, String> properties) {
    Objects.requireNonNull(properties, "collectiveProperties");
    Map<String, String> sorted = new TreeMap<>();
    for (Map.Entry<String, String> e : properties.entrySet()) {
      String key = Objects.requireNonNull(e.getKey(), "collective property key");
      String value = Objects.requireNonNull(e.getValue(), () -> "value of " + key);
      int dot = key.indexOf('.');
      if (dot < 1
          || dot == key.length() - 1
          || !key.equals(key.strip())
          || key.chars().anyMatch(Character::isWhitespace)) {
        throw new IllegalArgumentException(
            "collective property '"
                + key
                + "' is not"
                + " NAMESPACE.KEY: write a full key such as hazelcast.port or mpi.inline-longs");
      }
      if (key.startsWith("sim.")) {
        throw new IllegalArgumentException(
            "collective property '"
                + key
                + "' is in the sim"
                + " namespace, which the simulator sets itself from the ack delay and the seed:"
                + " use --ack-delay, --seed or --failure-probability instead");
      }
      sorted.put(key, value);
    }
    return Collections.unmodifiableMap(sorted);
  }

  private static void atLeast(String name, long value, long min) {
    if (value < min) {
      throw new IllegalArgumentException(name + "=" + value + " must be >= " + min);
    }
  }

  private static void probability(String name, double p) {
    if (!(p >= 0 && p <= 1)) {
      throw new IllegalArgumentException(name + "=" + p + " must be between 0 and 1");
    }
  }

  /**
   * Host pool pages per rank.
   *
   * @return {@code floor(devicePages * hostRatio)}, 0 without a host tier
   */
  public int hostPages() {
    return (int) Math.min(Integer.MAX_VALUE, (long) Math.floor(devicePages * hostRatio));
  }

  /**
   * Whether every rank is a thread of this JVM ({@link #LOCAL_COLLECTIVE}); otherwise each
   * process runs one rank.
   *
   * @return true for the {@code local} collective
   */
  public boolean threadRanks() {
    return collective.equals(LOCAL_COLLECTIVE);
  }

  /**
   * Whether requests take recurrent-state snapshots.
   *
   * @return {@code snapshotSlots() > 0}
   */
  public boolean snapshots() {
    return snapshotSlots > 0;
  }

  /**
   * The model id that enters the L3 keys' salt ({@code L3Config.modelId}): {@code kvtier-sim},
   * with {@code -layers-MIX} for a {@link #layerMix()} that is not all full attention (as the
   * tiny model's {@code ModelConfig.l3ModelId()} in {@code kvtier serve}), so that a store shared
   * by runs of two mixes ({@code --l3 file --l3-dir}) never serves one's pages to the other, and
   * all-full runs keep their keys; {@code -swa-windows} follows with {@link #windowedSwa()}, whose
   * snapshots differ.
   *
   * @return the model id
   */
  public String l3ModelId() {
    return "kvtier-sim"
        + layerMix.map(mix -> "-layers-" + mix).orElse("")
        + (windowedSwa ? "-swa-windows" : "");
  }

  /**
   * The KV layout of the simulated pools: 2 layers of one 4-element head, 2-byte elements,
   * whatever the layer mix ({@link PatternModel} writes a byte pattern per layer block, it does
   * not model the mix's layers).
   *
   * @return {@code (2, 1, 4, 2, pageSize)}
   */
  public io.kvtier.spi.KvLayout kvLayout() {
    return kvLayout(pageSize);
  }

  /**
   * The pools' layout of a simulation at a page size, as {@link #kvLayout()} gives it.
   *
   * @param pageSize tokens per page
   * @return {@code (2, 1, 4, 2, pageSize)}
   */
  public static io.kvtier.spi.KvLayout kvLayout(int pageSize) {
    return SimulatedRank.layout(pageSize);
  }

  /**
   * A builder with the defaults.
   *
   * @return a new builder
   */
  public static SimulationConfigBuilder builder() {
    return new SimulationConfigBuilder();
  }

  /**
   * A builder that starts from this config.
   *
   * @return a new builder
   */
  public SimulationConfigBuilder toBuilder() {
    return new SimulationConfigBuilder(this);
  }
}
