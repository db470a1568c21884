package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * One random operation sequence against a cache over {@link FakeKvMemory}, checked after every
 * step: the invariants, the bytes of every cached page, match results against a brute-force
 * reference walk, eviction victims against the policy order over all candidates, allocation
 * outcomes against the reclaimable pages, no prefix cached that was never inserted, and the
 * locked prefixes of active requests. Ends with every request finished or aborted, every copy
 * committed, and an idle cache with nothing leaked.
 */
final class Scenario {
  private static final int VOCAB = 1000;

  private final Random rnd;
  final int pageSize;
  final EvictionPolicy policy;
  final WritePolicy writePolicy;
  private final boolean faults;
  private final FakeKvMemory memory;
  final RankCache cache;
  private final KvPattern pattern;
  private final Map<Long, Active> active = new LinkedHashMap<>();
  private final Set<Long> inserted = new HashSet<>();
  private final List<int[]> corpus = new ArrayList<>();
  private final List<CacheLock> locks = new ArrayList<>();
  private final int steps;
  private long nextId = 1;

  /** Set by the eviction observer when a victim differs from the expected one. */
  private String victimError;

  int loadsSeen;
  int writesSeen;
  int evictionsSeen;
  int preparedSeen;
  int attachedSeen;

  private static final class Active {
    final long id;
    final long namespace;
    int[] tokens;
    boolean covered;

    /** Layers of the prepared backup not streamed yet, in the order they will be. */
    final List<Integer> toStream = new ArrayList<>();

    Active(long id, long namespace, int[] tokens) {
      this.id = id;
      this.namespace = namespace;
      this.tokens = tokens;
    }
  }

  Scenario(long seed, int index, int steps) {
    this(seed, index, steps, false);
  }

  /**
   * A scenario; with {@code snapshots} its cache takes recurrent-state snapshots (HYBRID.md §5)
   * of 1 or 2 slots every 1 to 3 pages, drawn from a generator of their own so that the rest of
   * the sequence is the one the seed gives without them.
   */
  Scenario(long seed, int index, int steps, boolean snapshots) {
    this.rnd = new Random(seed);
    this.steps = steps;
    this.pageSize = rnd.nextBoolean() ? 1 : 16;
    this.policy = EvictionPolicy.values()[index % EvictionPolicy.values().length];
    this.writePolicy = WritePolicy.values()[rnd.nextInt(WritePolicy.values().length)];
    int devicePages = pageSize == 1 ? 24 + rnd.nextInt(40) : 6 + rnd.nextInt(16);
    int hostPages =
        writePolicy == WritePolicy.WRITE_BACK || rnd.nextInt(4) != 0
            ? devicePages / 2 + rnd.nextInt(devicePages * 2)
            : 0;
    this.faults = hostPages > 0 && rnd.nextInt(4) == 0;
    CacheConfig config =
        new CacheConfig(
            pageSize,
            devicePages,
            hostPages,
            writePolicy,
            1 + rnd.nextInt(3),
            policy,
            1 + rnd.nextInt(2),
            VOCAB);
    if (snapshots) {
      Random own = new Random(~seed);
      config =
          config.withSnapshots(1 + own.nextInt(Math.min(2, devicePages - 1)), 1 + own.nextInt(3));
    }
    this.memory = new FakeKvMemory(FakeKvMemory.smallLayout(pageSize), devicePages, hostPages);
    this.cache =
        hostPages == 0
            ? RankCache.withMemory(config, memory.device)
            : RankCache.withMemory(config, memory.device, memory.host, memory.engine);
    this.pattern = new KvPattern(memory.layout);
    cache.rooms().evictor().observer =
        (host, victim) -> {
          RadixNode expected = CacheProbe.expectedVictim(cache, host);
          if (expected != victim && victimError == null) {
            victimError =
                (host ? "host" : "device")
                    + " eviction chose "
                    + victim
                    + " but the "
                    + policy
                    + " order over all candidates gives "
                    + expected;
          }
          evictionsSeen++;
        };
  }

  @Override
  public String toString() {
    return "Scenario[pageSize="
        + pageSize
        + ", "
        + policy
        + ", "
        + writePolicy
        + ", device="
        + cache.config().devicePages()
        + ", host="
        + cache.config().hostPages()
        + ", faults="
        + faults
        + "]";
  }

  void run() {
    for (int step = 0; step < steps; step++) {
      String op = step();
      try {
        verify();
      } catch (RuntimeException | AssertionError e) {
        throw new AssertionError("after step " + step + " (" + op + ") of " + this, e);
      }
    }
    drain();
  }

  private String step() {
    int dice = rnd.nextInt(100);
    if (dice < 24 || active.isEmpty()) {
      admit();
      return "admit";
    } else if (dice < 42) {
      finish();
      return "finish";
    } else if (dice < 47) {
      chunk();
      return "chunk";
    } else if (dice < 52) {
      Active a = pick();
      cache.abort(a.id);
      active.remove(a.id);
      return "abort";
    } else if (dice < 66) {
      sync();
      return "sync";
    } else if (dice < 70) {
      allocateMissing();
      return "allocate";
    } else if (dice < 74) {
      cache.evictDevice(1 + rnd.nextInt(4));
      return "evictDevice";
    } else if (dice < 76) {
      cache.evictHost(1 + rnd.nextInt(4));
      return "evictHost";
    } else if (dice < 80) {
      backup();
      return "backup";
    } else if (dice < 85) {
      lockOrUnlock();
      return "lock";
    } else if (dice < 90) {
      matchOnly();
      return "match";
    } else if (dice < 96) {
      streamOrPrepare();
      return "stream";
    }
    badInput();
    return "badInput";
  }

  private Active pick() {
    int i = rnd.nextInt(active.size());
    return new ArrayList<>(active.values()).get(i);
  }

  private int[] newPrompt() {
    int[] base =
        corpus.isEmpty() || rnd.nextInt(5) == 0
            ? new int[0]
            : corpus.get(rnd.nextInt(corpus.size()));
    int cut = base.length == 0 ? 0 : rnd.nextInt(base.length + 1);
    if (rnd.nextBoolean() && cut > 0) {
      cut -= cut % pageSize;
    }
    int extra = rnd.nextInt(pageSize == 1 ? 12 : 40) + (cut == 0 ? 1 : 0);
    int[] tokens = Arrays.copyOf(base, cut + extra);
    for (int i = cut; i < tokens.length; i++) {
      tokens[i] = rnd.nextInt(pageSize == 1 ? 4 : 3);
    }
    if (corpus.size() < 40) {
      corpus.add(tokens);
    } else {
      corpus.set(rnd.nextInt(corpus.size()), tokens);
    }
    return tokens;
  }

  private long namespace() {
    return rnd.nextInt(5) == 0 ? 5 : 0;
  }

  private void admit() {
    int[] tokens = newPrompt();
    long ns = namespace();
    RequestOptions options =
        new RequestOptions(
            ns,
            rnd.nextInt(4),
            switch (rnd.nextInt(3)) {
              case 0 -> 0;
              case 1 -> 1 + rnd.nextInt(6);
              default -> Integer.MAX_VALUE;
            });
    CacheProbe.Expected expected = CacheProbe.referenceMatch(cache, ns, tokens);
    long id = nextId++;
    Admission a = cache.admit(id, tokens, options);
    if (cache.config().snapshotSlots() == 0) {
      assertThat(a.devicePrefixLength() - a.loadedLength())
          .as("device prefix at admission")
          .isEqualTo(expected.deviceLength());
    } else {
      // The request resumes at its usable length, a node end with a device snapshot (I8).
      assertThat(a.matchedLength())
          .as("matched at admission")
          .isEqualTo(expected.deviceLength() + expected.hostHitLength());
      assertThat(a.usableLength()).isEqualTo(a.devicePrefixLength());
      assertThat(a.devicePrefixLength() - a.loadedLength())
          .isLessThanOrEqualTo(expected.deviceLength());
      assertThat(cache.resumeSlots(id).length > 0)
          .as("resume slots at a usable length of %d", a.usableLength())
          .isEqualTo(a.usableLength() > 0);
    }
    assertThat(a.hostHitLength()).as("host hit at admission").isEqualTo(expected.hostHitLength());
    if (a.loadedLength() > 0) {
      loadsSeen++;
      int pages = a.loadedLength() / pageSize;
      assertThat(pages).isBetween(cache.config().loadBackThreshold(), options.loadBackQuotaPages());
    }
    int[] row = new int[a.devicePrefixLength() / pageSize + 1];
    assertThat(cache.copyPageTable(id, row, 1)).isEqualTo(row.length - 1);
    if (a.pendingLoads().isEmpty()) {
      checkBytes(Arrays.copyOfRange(row, 1, row.length), ns, tokens, "admitted prefix");
    }
    Active r = new Active(id, ns, tokens);
    active.put(id, r);
    if (allocate(r, tokens.length) && rnd.nextInt(3) != 0) {
      prepare(r);
    }
  }

  /** Prepares a backup and picks a random subset of layers to stream, in random order. */
  private void prepare(Active r) {
    RequestState state = cache.rooms().requests().get(r.id);
    int full = Math.min(state.ownCount(), (state.tokens.length - state.prefixLength) / pageSize);
    int have = state.prepared == null ? 0 : state.prepared.pages;
    int hostFree = cache.hostUsage().free();
    int hostEvictable = cache.hostUsage().evictable();
    if (state.prepared != null && state.prepared.streamedCount > 0 && full > have) {
      assertThatThrownBy(() -> cache.prepareBackup(r.id))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("streamed layers");
      return;
    }
    // With recurrent-state snapshots the backup also reserves slots for the request's
    // snapshots in its pages and the tail at its end (HYBRID.md §5).
    int needed = full - have;
    int slots = cache.config().snapshotSlots();
    if (slots > 0 && full > have) {
      int end = state.prefixLength + full * pageSize;
      int states = 0;
      for (int i = 0; i < state.snapshotCount; i++) {
        int e = state.snapshotPositions[i];
        if (e > state.prefixLength && e <= end && state.snapshotSlots[i] != null) {
          states++;
        }
      }
      if (state.tailSlots != null && !cache.snapshotRule().isInterval(end)) {
        states++;
      }
      int held = state.prepared == null ? 0 : state.prepared.hostSlots.length;
      needed = full + states * slots - held;
    }
    boolean prepared = cache.prepareBackup(r.id);
    // A request that recomputes pages the tree matched prepares none (its insert finds the
    // tree's nodes there) until a chunk insert has taken its prefix past the match.
    boolean possible =
        cache.config().hostPages() > 0
            && writePolicy != WritePolicy.WRITE_BACK
            && full > 0
            && state.matchedLength <= state.prefixLength;
    if (prepared) {
      assertThat(possible).as("prepared backup for an ineligible request").isTrue();
      assertThat(state.prepared.pages).isEqualTo(full);
      if (have == 0) {
        preparedSeen++;
        r.toStream.clear();
        int layers = memory.layout.layers();
        for (int layer = 0; layer < layers; layer++) {
          if (rnd.nextBoolean()) {
            r.toStream.add(layer);
          }
        }
        java.util.Collections.shuffle(r.toStream, rnd);
      }
    } else if (possible) {
      assertThat(hostFree + hostEvictable)
          .as("prepareBackup refused %d pages", needed)
          .isLessThan(needed);
    }
  }

  /** Streams the next layer of a request's prepared backup, or prepares one. */
  private void streamOrPrepare() {
    if (active.isEmpty()) {
      return;
    }
    Active r = pick();
    RequestState state = cache.rooms().requests().get(r.id);
    if (state.prepared == null || r.toStream.isEmpty()) {
      if (r.covered || rnd.nextBoolean()) {
        prepare(r);
      }
      return;
    }
    int layer = r.toStream.remove(0);
    long before = memory.engine.submittedWrites;
    cache.streamLayer(r.id, layer);
    assertThat(memory.engine.submittedWrites - before)
        .as("one batch per streamed layer")
        .isEqualTo(1);
    assertThat(state.prepared.streamed(layer)).isTrue();
    assertThatThrownBy(() -> cache.streamLayer(r.id, layer))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("layer=" + layer);
  }

  private void checkBytes(int[] slots, long ns, int[] tokens, String what) {
    long[] hashes = KvPattern.prefixHashes(ns, tokens, tokens.length);
    for (int i = 0; i < slots.length; i++) {
      assertThat(pattern.matches(memory.device, slots[i], hashes, i))
          .as(what + ": page " + i + " in slot " + slots[i])
          .isTrue();
    }
  }

  /** Allocates pages for {@code length} tokens and writes their KV; false if the pool is short. */
  private boolean allocate(Active r, int length) {
    int free = cache.deviceUsage().free();
    int reclaimable = CacheProbe.reclaimablePages(cache);
    RequestState state = cache.rooms().requests().get(r.id);
    int needed =
        (length + pageSize - 1) / pageSize - state.prefixLength / pageSize - state.ownCount();
    if (needed > 0 && cache.config().snapshotSlots() > 0) {
      // The interval and tail snapshot slots come with the pages (HYBRID.md §5).
      SnapshotRule rule = cache.snapshotRule();
      long held = state.prefixLength + (long) (state.ownCount() + needed) * pageSize;
      int sets = state.tailSlots == null ? 1 : 0;
      for (long e = state.nextSnapshot; e <= held; e = rule.nextInterval((int) e)) {
        sets++;
      }
      needed += sets * cache.config().snapshotSlots();
    }
    try {
      cache.allocateTokens(r.id, length);
    } catch (PoolExhaustedException e) {
      if (!cache.rooms().backups().writeBack()) {
        assertThat(free + reclaimable)
            .as("allocation of %d pages failed", needed)
            .isLessThan(needed);
      }
      r.covered = false;
      return false;
    }
    if (needed > 0 && !cache.rooms().backups().writeBack()) {
      assertThat(free + reclaimable).isGreaterThanOrEqualTo(needed);
    }
    r.covered = length >= r.tokens.length;
    writeOwnPages(r);
    return true;
  }

  private void writeOwnPages(Active r) {
    RequestState state = cache.rooms().requests().get(r.id);
    long[] hashes = KvPattern.prefixHashes(r.namespace, r.tokens, r.tokens.length);
    int first = state.prefixLength / pageSize;
    for (int i = 0; i < state.ownCount(); i++) {
      pattern.write(memory.device, state.own.slot(i), hashes, first + i);
    }
  }

  private void allocateMissing() {
    for (Active r : active.values()) {
      if (!r.covered) {
        allocate(r, r.tokens.length);
        return;
      }
    }
  }

  private void recordInserted(long ns, int[] tokens, int length) {
    long[] hashes = KvPattern.prefixHashes(ns, tokens, length);
    for (int end = pageSize; end <= length; end += pageSize) {
      inserted.add(hashes[end - 1]);
    }
  }

  private void finish() {
    Active r = pick();
    if (!r.covered && !allocate(r, r.tokens.length)) {
      cache.abort(r.id);
      active.remove(r.id);
      return;
    }
    if (rnd.nextInt(3) == 0) {
      int[] longer = Arrays.copyOf(r.tokens, r.tokens.length + 1 + rnd.nextInt(2 * pageSize));
      for (int i = r.tokens.length; i < longer.length; i++) {
        longer[i] = rnd.nextInt(4);
      }
      int[] previous = r.tokens;
      r.tokens = longer;
      if (!allocate(r, longer.length)) {
        r.tokens = previous;
        r.covered = true;
      }
    }
    int aligned = r.tokens.length - r.tokens.length % pageSize;
    boolean valid = CacheTree.pathValid(cache.rooms().requests().get(r.id).lockNode);
    recordInserted(r.namespace, r.tokens, aligned);
    long attached = cache.stats().preparedAttached();
    int cached = cache.finish(r.id, r.tokens);
    attachedSeen += (int) (cache.stats().preparedAttached() - attached);
    active.remove(r.id);
    assertThat(cached).isBetween(0, aligned);
    if (valid && !faults) {
      assertThat(CacheProbe.referenceMatch(cache, r.namespace, r.tokens).deviceLength())
          .as("device prefix right after finish")
          .isEqualTo(aligned);
    }
  }

  private void chunk() {
    Active r = pick();
    if (!r.covered) {
      return;
    }
    RequestState state = cache.rooms().requests().get(r.id);
    int computed = state.prefixLength + rnd.nextInt(r.tokens.length - state.prefixLength + 1);
    recordInserted(r.namespace, r.tokens, computed - computed % pageSize);
    int[] table = cache.cacheChunk(r.id, computed);
    state = cache.rooms().requests().get(r.id);
    assertThat(table).hasSize(state.prefixLength / pageSize + state.ownCount());
    if (CacheTree.pathValid(state.lockNode) && !hasPendingLoad(state.lockNode)) {
      checkBytes(
          Arrays.copyOf(table, state.prefixLength / pageSize),
          r.namespace,
          r.tokens,
          "chunk prefix");
    }
  }

  private static boolean hasPendingLoad(RadixNode node) {
    for (RadixNode n = node; n.parent != null; n = n.parent) {
      if (n.pendingLoad != null) {
        return true;
      }
    }
    return false;
  }

  private void sync() {
    FakeKvMemory.Engine engine = memory.engine;
    if (engine != null) {
      int writes = rnd.nextInt(engine.pendingWrites() + 1);
      for (int i = 0; i < writes; i++) {
        engine.completeWrite(faults && rnd.nextInt(7) == 0);
      }
      int loads = rnd.nextInt(engine.pendingLoads() + 1);
      for (int i = 0; i < loads; i++) {
        engine.completeLoad(faults && rnd.nextInt(7) == 0);
      }
    }
    writesSeen += cache.pendingWrites();
    if (rnd.nextBoolean()) {
      cache.sync();
    } else {
      cache.commits().commitWrites(rnd.nextInt(cache.commits().readyWritePrefix() + 1));
      cache.commits().commitLoads(rnd.nextInt(cache.commits().readyLoadPrefix() + 1));
    }
  }

  private RadixNode randomNode() {
    List<RadixNode> nodes = CacheProbe.nodes(cache);
    return nodes.isEmpty() ? null : nodes.get(rnd.nextInt(nodes.size()));
  }

  private void backup() {
    RadixNode n = randomNode();
    if (n == null) {
      return;
    }
    if (n.backupState == BackupState.PENDING) {
      assertThatThrownBy(() -> cache.backup(n))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("PENDING");
      return;
    }
    boolean eligible =
        cache.config().hostPages() > 0
            && n.resident()
            && n.hostSlots == null
            && n.invalid == 0
            && (n.parent.parent == null || n.parent.hostSlots != null);
    boolean registered = cache.backup(n);
    if (registered) {
      assertThat(eligible).as("backup registered for an ineligible node").isTrue();
      assertThat(n.backupState).isEqualTo(BackupState.PENDING);
    } else if (eligible) {
      // The node's snapshot needs host slots too (HYBRID.md §5).
      int wanted = n.pageCount + (n.stateSlots == null ? 0 : n.stateSlots.length);
      assertThat(cache.hostUsage().free()).as("eligible backup refused").isLessThan(wanted);
    }
  }

  private void lockOrUnlock() {
    if (!locks.isEmpty() && rnd.nextBoolean()) {
      CacheLock lock = locks.remove(rnd.nextInt(locks.size()));
      cache.unlock(lock);
      if (rnd.nextInt(4) == 0) {
        assertThatThrownBy(() -> cache.unlock(lock))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("already released");
      }
      return;
    }
    RadixNode n = randomNode();
    if (n != null && n.invalid == 0) {
      locks.add(cache.lock(n));
    }
  }

  private void matchOnly() {
    int[] tokens =
        rnd.nextBoolean() && !corpus.isEmpty()
            ? corpus.get(rnd.nextInt(corpus.size()))
            : newPrompt();
    long ns = namespace();
    CacheProbe.Expected expected = CacheProbe.referenceMatch(cache, ns, tokens);
    MatchResult m = cache.match(ns, tokens);
    assertThat(m.deviceLength()).as("match device length").isEqualTo(expected.deviceLength());
    assertThat(m.hostHitLength()).as("match host hit").isEqualTo(expected.hostHitLength());
    assertThat(m.lastHostNode().prefixLength())
        .isEqualTo(expected.deviceLength() + expected.hostHitLength());
    if (m.pendingLoads().isEmpty()) {
      checkBytes(m.deviceSlots(), ns, tokens, "matched prefix");
    }
  }

  private void badInput() {
    String before = CacheProbe.digest(cache);
    switch (rnd.nextInt(6)) {
      case 0 -> {
        int[] bad = newPrompt().clone();
        bad[rnd.nextInt(bad.length)] = rnd.nextBoolean() ? -1 - rnd.nextInt(5) : VOCAB;
        assertThatThrownBy(() -> cache.admit(nextId, bad))
            .isInstanceOf(InvalidTokenException.class)
            .hasMessageContaining("out of range");
      }
      case 1 ->
          assertThatThrownBy(() -> cache.finish(nextId + 1000))
              .isInstanceOf(UnknownRequestException.class)
              .hasMessageContaining("id=" + (nextId + 1000));
      case 2 ->
          assertThatThrownBy(() -> cache.abort(-7)).isInstanceOf(UnknownRequestException.class);
      case 3 -> {
        if (!active.isEmpty()) {
          Active r = pick();
          assertThatThrownBy(() -> cache.allocate(r.id, -1))
              .isInstanceOf(IllegalArgumentException.class);
        }
      }
      case 4 ->
          assertThatThrownBy(() -> cache.commits().commitWrites(cache.pendingWrites() + 1))
              .isInstanceOf(IllegalArgumentException.class);
      default -> {
        if (!active.isEmpty()) {
          Active r = pick();
          RequestState state = cache.rooms().requests().get(r.id);
          if (state.prefixLength > 0 && r.covered) {
            int[] wrong = r.tokens.clone();
            wrong[0] = wrong[0] == 0 ? 1 : 0;
            assertThatThrownBy(() -> cache.finish(r.id, wrong))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("differ from the admitted prompt");
          }
        }
      }
    }
    assertThat(CacheProbe.digest(cache)).as("state after rejected input").isEqualTo(before);
  }

  private void verify() {
    // The incremental check and digest first, on what this step changed; then the full check,
    // which also fails if a change went unmarked (ChangedNodes).
    CacheInvariants.checkChanged(cache);
    assertThat(cache.replicaDigest()).as("incremental digest").isEqualTo(ReplicaDigest.full(cache));
    CacheInvariants.check(cache);
    if (victimError != null) {
      throw new AssertionError(victimError);
    }
    String bad = pattern.verifyTree(cache, memory.device, memory.host);
    if (bad != null) {
      throw new AssertionError(bad);
    }
    for (RadixNode n : CacheProbe.nodes(cache)) {
      if (n.invalid == 0) {
        int[] tokens = KvPattern.pathTokens(n);
        long[] hashes = KvPattern.prefixHashes(n.namespace, tokens, tokens.length);
        for (int end = tokens.length - n.keyLength + pageSize;
            end <= tokens.length;
            end += pageSize) {
          if (!inserted.contains(hashes[end - 1])) {
            throw new AssertionError(
                n + " caches a prefix of " + end + " tokens that no request inserted");
          }
        }
      }
    }
  }

  /** Ends every request, commits every copy and checks that nothing is left. */
  void drain() {
    for (Active r : new ArrayList<>(active.values())) {
      if (r.covered && rnd.nextBoolean()) {
        recordInserted(r.namespace, r.tokens, r.tokens.length - r.tokens.length % pageSize);
        cache.finish(r.id, r.tokens);
      } else {
        cache.abort(r.id);
      }
      active.remove(r.id);
    }
    for (CacheLock lock : locks) {
      cache.unlock(lock);
    }
    locks.clear();
    for (int round = 0; cache.outstandingOperations() > 0; round++) {
      assertThat(round).as("sync rounds").isLessThan(100);
      if (memory.engine != null) {
        memory.engine.completeAll();
      }
      cache.sync();
      CacheInvariants.check(cache);
    }
    CacheInvariants.checkIdle(cache);
    String bad = pattern.verifyTree(cache, memory.device, memory.host);
    if (bad != null) {
      throw new AssertionError(bad);
    }
    if (victimError != null) {
      throw new AssertionError(victimError);
    }
    assertThat(cache.deviceUsage().protectedPages()).isZero();
    BitSet none = new BitSet();
    assertThat(cache.commits().localWriteFailures(0)).isEqualTo(none);
  }
}
