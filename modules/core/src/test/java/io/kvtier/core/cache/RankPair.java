package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.KvLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.function.Function;

/**
 * Two simulated ranks, one whose copies complete fast and one slow, driven with the same seeded
 * operations (prompts with shared prefixes, prepared backups with random subsets of streamed
 * layers, finishes with output, aborts, evictions under pressure) and synced with the protocol
 * of ARCHITECTURE.md §6: MIN of the ready prefixes, OR of the local failures. Every operation must
 * return the same result on both; {@link #step()} reports which operation ran, and the caller
 * compares the replica digests after it.
 */
final class RankPair implements AutoCloseable {
  static final int FAST = 0;
  static final int SLOW = 1;

  final SimRank[] ranks;
  private final Random rnd;
  private final int pageSize;
  private final int layers;
  private final KvPattern pattern;
  private final Map<Long, Request> active = new LinkedHashMap<>();
  private final List<int[]> corpus = new ArrayList<>();
  private long nextId = 1;

  /** Finishes of a request with streamed layers while only the slow rank still copied. */
  int skewedFinishes;

  int prepared;

  private static final class Request {
    final long id;
    int[] tokens;
    boolean prepared;
    int[] layerOrder;
    int toStream;
    int streamed;

    Request(long id, int[] tokens) {
      this.id = id;
      this.tokens = tokens;
    }
  }

  RankPair(long seed, WritePolicy writePolicy, double failureProbability) {
    this(seed, writePolicy, failureProbability, rank -> CacheEventListener.NONE);
  }

  /** A pair whose rank {@code r}'s cache reports its KV events to {@code listeners.apply(r)}. */
  RankPair(
      long seed,
      WritePolicy writePolicy,
      double failureProbability,
      java.util.function.IntFunction<CacheEventListener> listeners) {
    this.rnd = new Random(seed);
    this.pageSize = rnd.nextBoolean() ? 1 : 4;
    this.layers = 2 + rnd.nextInt(3);
    int devicePages = pageSize == 1 ? 40 + rnd.nextInt(40) : 12 + rnd.nextInt(12);
    int hostPages = devicePages + rnd.nextInt(devicePages * 2);
    EvictionPolicy policy = EvictionPolicy.values()[rnd.nextInt(EvictionPolicy.values().length)];
    CacheConfig config =
        new CacheConfig(pageSize, devicePages, hostPages, writePolicy, 2, policy, 1, 64);
    KvLayout layout = new KvLayout(layers, 1, 2, 2, pageSize);
    this.pattern = new KvPattern(layout);
    long simSeed = rnd.nextLong();
    this.ranks =
        new SimRank[] {
          new SimRank(FAST, config, layout, simSeed, failureProbability, listeners.apply(FAST)),
          new SimRank(SLOW, config, layout, simSeed, failureProbability, listeners.apply(SLOW))
        };
  }

  RankCache cache(int rank) {
    return ranks[rank].cache;
  }

  @Override
  public String toString() {
    RankCache c = cache(FAST);
    return "RankPair[pageSize="
        + pageSize
        + ", layers="
        + layers
        + ", "
        + c.config().writePolicy()
        + ", "
        + c.config().evictionPolicy()
        + ", device="
        + c.config().devicePages()
        + ", host="
        + c.config().hostPages()
        + "]";
  }

  // ---------------------------------------------------------------- agreement helpers

  /** Runs {@code op} on both ranks; both must return equal results or throw the same type. */
  @SuppressWarnings("unchecked")
  <T> T agree(String what, Function<RankCache, T> op) {
    Object[] results = new Object[2];
    RuntimeException[] errors = new RuntimeException[2];
    for (int i = 0; i < 2; i++) {
      try {
        results[i] = op.apply(cache(i));
      } catch (RuntimeException e) {
        errors[i] = e;
      }
    }
    if (errors[0] != null || errors[1] != null) {
      if (errors[0] == null || errors[1] == null || errors[0].getClass() != errors[1].getClass()) {
        AssertionError e =
            new AssertionError(
                what
                    + ": the ranks disagree: fast "
                    + (errors[0] == null ? "returned" : "threw " + errors[0])
                    + ", slow "
                    + (errors[1] == null ? "returned" : "threw " + errors[1]));
        Arrays.stream(errors).filter(Objects::nonNull).forEach(e::addSuppressed);
        throw e;
      }
      throw errors[0];
    }
    assertThat(Objects.deepEquals(results[0], results[1]))
        .as("%s: fast returned %s, slow %s", what, show(results[0]), show(results[1]))
        .isTrue();
    return (T) results[0];
  }

  private static String show(Object o) {
    return o instanceof int[] a ? Arrays.toString(a) : String.valueOf(o);
  }

  /** The per-tick sync of ARCHITECTURE.md §6: skipped iff nothing is outstanding (same test). */
  void sync() {
    int outstanding = agree("outstandingOperations", RankCache::outstandingOperations);
    if (outstanding == 0) {
      return;
    }
    int writes =
        Math.min(
            cache(FAST).commits().readyWritePrefix(), cache(SLOW).commits().readyWritePrefix());
    int loads =
        Math.min(cache(FAST).commits().readyLoadPrefix(), cache(SLOW).commits().readyLoadPrefix());
    BitSet writeFailures = cache(FAST).commits().localWriteFailures(writes);
    writeFailures.or(cache(SLOW).commits().localWriteFailures(writes));
    BitSet loadFailures = cache(FAST).commits().localLoadFailures(loads);
    loadFailures.or(cache(SLOW).commits().localLoadFailures(loads));
    for (int i = 0; i < 2; i++) {
      cache(i).commits().commitLoads(loads, loadFailures);
      cache(i).commits().commitWrites(writes, writeFailures);
    }
  }

  /** Time passes: 10 ms on the fast rank, a few copies' worth (0-30 us) on the slow one. */
  void tick() {
    ranks[FAST].advance(10_000_000);
    ranks[SLOW].advance(rnd.nextInt(30_000));
  }

  /** The replica digests of both ranks. */
  long[] digests() {
    return new long[] {cache(FAST).replicaDigest(), cache(SLOW).replicaDigest()};
  }

  /** Invariants and page bytes (device pages of the tree, committed host copies) of both. */
  void verify() {
    for (SimRank r : ranks) {
      CacheInvariants.check(r.cache);
      String bad = pattern.verifyTree(r.cache, r.device, r.host);
      if (bad != null) {
        throw new AssertionError("rank " + r.rank + ": " + bad);
      }
    }
  }

  // ---------------------------------------------------------------- the workload

  String step() {
    int dice = rnd.nextInt(100);
    if (active.isEmpty() && dice >= 50) {
      tick();
      sync();
      return "sync";
    }
    if (active.isEmpty() || dice < 22) {
      admit();
      return "admit";
    } else if (dice < 48) {
      stream();
      return "stream";
    } else if (dice < 64) {
      finish();
      return "finish";
    } else if (dice < 68) {
      Request r = pick();
      agree(
          "abort",
          c -> {
            c.abort(r.id);
            return null;
          });
      active.remove(r.id);
      return "abort";
    } else if (dice < 84) {
      tick();
      sync();
      return "sync";
    } else if (dice < 90) {
      tick();
      return "tick";
    } else if (dice < 95) {
      int pages = 1 + rnd.nextInt(4);
      agree("evictDevice", c -> c.evictDevice(pages));
      return "evictDevice";
    }
    int[] tokens = corpus.isEmpty() ? newPrompt() : corpus.get(rnd.nextInt(corpus.size()));
    agree(
        "match",
        c -> {
          MatchResult m = c.match(0, tokens);
          return new int[] {m.deviceLength(), m.hostHitLength()};
        });
    return "match";
  }

  private Request pick() {
    return new ArrayList<>(active.values()).get(rnd.nextInt(active.size()));
  }

  private int[] newPrompt() {
    int[] base =
        corpus.isEmpty() || rnd.nextInt(4) == 0
            ? new int[0]
            : corpus.get(rnd.nextInt(corpus.size()));
    int cut = base.length == 0 ? 0 : rnd.nextInt(base.length + 1);
    if (rnd.nextBoolean()) {
      cut -= cut % pageSize;
    }
    int[] tokens = Arrays.copyOf(base, cut + 1 + rnd.nextInt(5 * pageSize));
    for (int i = cut; i < tokens.length; i++) {
      tokens[i] = rnd.nextInt(3);
    }
    if (corpus.size() < 24) {
      corpus.add(tokens);
    } else {
      corpus.set(rnd.nextInt(corpus.size()), tokens);
    }
    return tokens;
  }

  private void admit() {
    int[] tokens = newPrompt();
    long id = nextId++;
    agree(
        "admit",
        c -> {
          Admission a = c.admit(id, tokens);
          return new int[] {a.devicePrefixLength(), a.hostHitLength(), a.loadedLength()};
        });
    Request r = new Request(id, tokens);
    active.put(id, r);
    if (!allocate(r, tokens.length)) {
      return;
    }
    if (rnd.nextInt(5) != 0) {
      r.prepared = agree("prepareBackup", c -> c.prepareBackup(id));
      if (r.prepared) {
        prepared++;
        r.layerOrder = shuffledLayers();
        r.toStream = rnd.nextInt(layers + 1);
      }
    }
  }

  /** Allocates and writes the request's KV on both ranks; aborts it if the pool is short. */
  private boolean allocate(Request r, int length) {
    try {
      agree("allocateTokens", c -> c.allocateTokens(r.id, length));
    } catch (PoolExhaustedException e) {
      agree(
          "abort after PoolExhaustedException",
          c -> {
            c.abort(r.id);
            return null;
          });
      active.remove(r.id);
      // Pending backups protect the pool until they commit: let time pass and sync.
      tick();
      sync();
      return false;
    }
    long[] hashes = KvPattern.prefixHashes(0, r.tokens, r.tokens.length);
    for (SimRank rank : ranks) {
      RequestState s = rank.cache.rooms().requests().get(r.id);
      int pages = Math.min(s.ownCount(), (r.tokens.length - s.prefixLength) / pageSize);
      for (int i = 0; i < pages; i++) {
        pattern.write(rank.device, s.own.slot(i), hashes, s.prefixLength / pageSize + i);
      }
    }
    return true;
  }

  private int[] shuffledLayers() {
    int[] order = new int[layers];
    for (int i = 0; i < layers; i++) {
      order[i] = i;
    }
    for (int i = layers - 1; i > 0; i--) {
      int j = rnd.nextInt(i + 1);
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    return order;
  }

  private void stream() {
    for (Request r : active.values()) {
      if (r.prepared && r.streamed < r.toStream) {
        int layer = r.layerOrder[r.streamed++];
        agree(
            "streamLayer",
            c -> {
              c.streamLayer(r.id, layer);
              return null;
            });
        return;
      }
    }
  }

  private void finish() {
    Request r = pick();
    if (r.prepared
        && r.streamed > 0
        && ranks[FAST].engine.inFlight() == 0
        && ranks[SLOW].engine.inFlight() > 0) {
      skewedFinishes++;
    }
    int[] tokens = r.tokens;
    if (rnd.nextInt(3) == 0) {
      int[] longer = Arrays.copyOf(tokens, tokens.length + 1 + rnd.nextInt(2 * pageSize));
      for (int i = tokens.length; i < longer.length; i++) {
        longer[i] = 3 + rnd.nextInt(2);
      }
      r.tokens = longer;
      if (!allocate(r, longer.length)) {
        return;
      }
      tokens = longer;
    }
    int[] done = tokens;
    agree("finish", c -> c.finish(r.id, done));
    active.remove(r.id);
  }

  /** Ends every request, commits every copy, and checks both ranks are idle and equal. */
  void drain() {
    for (Request r : new ArrayList<>(active.values())) {
      agree("drain finish", c -> c.finish(r.id, r.tokens));
      active.remove(r.id);
    }
    for (int round = 0; cache(FAST).outstandingOperations() > 0; round++) {
      assertThat(round).as("sync rounds").isLessThan(50);
      ranks[FAST].advance(1_000_000_000L);
      ranks[SLOW].advance(1_000_000_000L);
      sync();
    }
    for (SimRank r : ranks) {
      CacheInvariants.checkIdle(r.cache);
    }
    verify();
  }

  @Override
  public void close() {
    for (SimRank r : ranks) {
      r.close();
    }
  }
}
