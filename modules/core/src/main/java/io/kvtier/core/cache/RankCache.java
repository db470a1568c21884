package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.TransferEngine;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The hierarchical radix KV cache of one rank: the paged radix tree, the device (L1) and host
 * (L2) pools, eviction, backups and load-backs (HICACHE-SPEC §1–§10).
 *
 * <p>A server drives it per request: {@link #admit} matches and locks the cached prefix (and may
 * start a load-back), {@link #allocate} gives device pages for the tokens the request computes,
 * {@link #cacheChunk} caches a chunked prefill's progress, and {@link #finish} inserts the result
 * and releases the request ({@link #abort} releases without inserting). Once per scheduler tick
 * it calls {@link #sync()} (one rank) or, across ranks, agrees on {@link #readyWritePrefix()} and
 * {@link #readyLoadPrefix()} and calls {@link #commitWrites(int)} and {@link #commitLoads(int)}
 * with the agreed counts; the sync may be skipped exactly when {@link #outstandingOperations()}
 * is 0.
 *
 * <p>Prepared backups (HICACHE-SPEC §11): after {@link #allocate}, {@link #prepareBackup}
 * reserves host slots for the request's own pages, {@link #streamLayer} copies each layer the
 * model has finished, and the insert at {@link #finish} attaches the backup to the node that
 * holds exactly those pages when the replicated predicate holds, or rolls it back.
 *
 * <p>Replicated versus rank-local, by type (ARCHITECTURE §4): every decision that changes the
 * tree or a pool reads replicated state only (tree, backup states, locks, logical clock,
 * occupancy, FIFO order, prepared-backup extents and streamed layers). Copy handles and their
 * completion live in one rank-local holder that no tree, eviction or attach code can reach; its
 * only exits are the rank-local queries {@link #readyWritePrefix()}, {@link #readyLoadPrefix()},
 * {@link #localWriteFailures(int)} and {@link #localLoadFailures(int)} (plus the model's layer
 * waits {@link #isLoadLayerReady} and {@link #awaitLoadLayer}), and copy completion enters the
 * tree only through the commit calls with agreed arguments. The cache never reads the wall clock.
 * {@link #replicaDigest()} hashes the replicated state for a cross-rank divergence check, and
 * {@link #stats()} reports replicated counters.
 *
 * <p>Not thread-safe: one scheduler thread calls it. The token arrays passed to {@link #admit}
 * and {@link #cacheChunk} are kept by reference until the request ends and must not be modified
 * meanwhile.
 */
public final class RankCache {
  private final CacheConfig config;
  private final CacheTree tree;
  private final Transfers transfers;
  private final Evictor evictor;
  private final PreparedBackups prepared;
  private final CacheCounters counters = new CacheCounters();
  /** Rank-local copy progress: held as such here only; the rest sees it as a CopySink. */
  private final LocalProgress progress;
  private final Optional<KvMemory> memory;
  private final LongMap<RequestState> requests = new LongMap<>(64);
  private final RequestState.Pool states = new RequestState.Pool();
  private final LongMap<CacheLock> locks = new LongMap<>(4);
  private long lockSerial;
  /** The outcome of the last admitted request's prefetch, for {@link #admittedPrefetch}. */
  private PrefetchOutcome lastOutcome;
  private final RuleVariants rules = new RuleVariants();
  /** The L3 tier's replicated controller, or null without an L3 tier. */
  private final L3Tier l3;
  /** Rank-local L3 progress: held as such here only; the tier sees it as an L3Sink. */
  private final L3Progress l3Progress;

  private RankCache(CacheConfig config, Optional<KvMemory> memory) {
    this(config, memory, null);
  }

  private RankCache(CacheConfig config, Optional<KvMemory> memory, L3Setup l3Setup) {
    this.config = config;
    this.memory = memory;
    this.tree = new CacheTree(config.pageSize(), config.evictionPolicy(), config.devicePages(),
        config.hostPages());
    this.progress = new LocalProgress(memory.flatMap(KvMemory::engine).orElse(null));
    int layers = memory.map(KvMemory::layers).orElse(0);
    boolean hostTier = config.hostPages() > 0 && memory.flatMap(KvMemory::engine).isPresent();
    this.transfers = new Transfers(tree, config, progress, layers, hostTier, counters);
    this.evictor = new Evictor(tree, transfers);
    tree.transfers = transfers;
    transfers.evictor = evictor;
    this.prepared = new PreparedBackups(tree, transfers, config, layers, hostTier, rules);
    if (l3Setup != null) {
      this.l3Progress = new L3Progress(l3Setup, memory.orElseThrow().host().orElseThrow());
      this.l3 = new L3Tier(l3Setup.config(), tree, transfers, l3Progress);
      tree.l3 = l3;
    } else {
      this.l3Progress = null;
      this.l3 = null;
    }
  }

  /**
   * A cache that only manages the tree and the page slots, with no memory behind them: the
   * allocator-only mode of benchmarks and schedulers that keep KV elsewhere.
   *
   * @param config the settings; {@code hostPages} must be 0
   * @return the cache
   * @throws IllegalArgumentException if the config has a host tier
   */
  public static RankCache withoutMemory(CacheConfig config) {
    Objects.requireNonNull(config, "config");
    if (config.hostPages() != 0) {
      throw new IllegalArgumentException("hostPages=" + config.hostPages()
          + " but a cache without memory cannot copy pages to a host tier: set hostPages=0, or"
          + " use RankCache.withMemory(config, device, host, transfers)");
    }
    return new RankCache(config, Optional.empty());
  }

  /**
   * A cache over a device pool only (no host tier).
   *
   * @param config the settings; {@code hostPages} must be 0
   * @param device the device pool, of {@code config.devicePages()} pages of {@code
   *     config.pageSize()} tokens
   * @return the cache
   */
  public static RankCache withMemory(CacheConfig config, DeviceMemory device) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(device, "device");
    if (config.hostPages() != 0) {
      throw new IllegalArgumentException("hostPages=" + config.hostPages()
          + " needs a host pool and a transfer engine: use withMemory(config, device, host,"
          + " transfers)");
    }
    checkPool("device", device.spec().pages(), config.devicePages(), device.spec().layout(),
        config);
    return new RankCache(config, Optional.of(new KvMemory(device, Optional.empty(),
        Optional.empty(), device.spec().layout().layers())));
  }

  /**
   * A cache over a device pool, a host pool and the transfer engine between them.
   *
   * @param config the settings; {@code hostPages} must be at least 1
   * @param device the device pool, {@code config.devicePages()} pages
   * @param host the host pool, {@code config.hostPages()} pages, same layout as the device
   * @param transfers the engine created by {@code device.transferEngine(host)}
   * @return the cache
   */
  public static RankCache withMemory(
      CacheConfig config, DeviceMemory device, HostMemory host, TransferEngine transfers) {
    return new RankCache(config, Optional.of(checkedMemory(config, device, host, transfers)));
  }

  private static KvMemory checkedMemory(
      CacheConfig config, DeviceMemory device, HostMemory host, TransferEngine transfers) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(transfers, "transfers");
    if (config.hostPages() == 0) {
      throw new IllegalArgumentException(
          "hostPages=0 but a host pool was given: set hostPages or use withMemory(config, device)");
    }
    KvLayout layout = device.spec().layout();
    checkPool("device", device.spec().pages(), config.devicePages(), layout, config);
    checkPool("host", host.spec().pages(), config.hostPages(), host.spec().layout(), config);
    if (!layout.equals(host.spec().layout())) {
      throw new IllegalArgumentException("device layout " + layout + " differs from host layout "
          + host.spec().layout() + ": open both pools with the same KvLayout");
    }
    return new KvMemory(device, Optional.of(host), Optional.of(transfers), layout.layers());
  }

  /**
   * A cache over a device pool, a host pool, the transfer engine between them, and an L3 store
   * (HICACHE-SPEC §12): host-committed nodes are written to the store in the background, and
   * {@link #startPrefetch} fetches a request's pages that only the store has.
   *
   * @param config the settings; {@code hostPages} must be at least 1
   * @param device the device pool
   * @param host the host pool
   * @param transfers the engine created by {@code device.transferEngine(host)}
   * @param l3 the store, its executor, settings, clock and the rank's place in the group
   * @return the cache
   */
  public static RankCache withMemory(CacheConfig config, DeviceMemory device, HostMemory host,
      TransferEngine transfers, L3Setup l3) {
    Objects.requireNonNull(l3, "l3");
    return new RankCache(config, Optional.of(checkedMemory(config, device, host, transfers)),
        l3);
  }

  private static void checkPool(String name, int pages, int expected, KvLayout layout,
      CacheConfig config) {
    if (pages != expected) {
      throw new IllegalArgumentException(name + " pool has " + pages + " pages but the config says "
          + expected + ": open the pool with the configured page count");
    }
    if (layout.pageSize() != config.pageSize()) {
      throw new IllegalArgumentException(name + " pool pageSize=" + layout.pageSize()
          + " differs from config pageSize=" + config.pageSize());
    }
  }

  /**
   * The settings.
   *
   * @return the config
   */
  public CacheConfig config() {
    return config;
  }

  // ---------------------------------------------------------------- match and admission

  /**
   * Matches the page-aligned prefix of {@code tokens} without locking it (HICACHE-SPEC §2). Like
   * every match it touches the nodes passed and may split one at a page boundary.
   *
   * @param namespace the namespace
   * @param tokens the token ids
   * @return what is cached where
   * @throws InvalidTokenException if a token id is outside the vocabulary
   */
  public MatchResult match(long namespace, int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    RadixNode root = rootFor(namespace, tokens);
    Scan scan = scan(root, tokens, false);
    if (rules.accessClock != null) {
      restampWalkedPath();
    }
    // A query in a namespace nothing was cached in must not leave an empty root behind.
    tree.maybeDropRoot(root);
    return new MatchResult(tree.pathDeviceSlots(scan.lastDevice), scan.lastDevice.depth,
        scan.hostLength, scan.lastDevice, scan.lastHost, scan.loads);
  }

  /**
   * What the last {@link #scan} found; one instance, refilled by every scan and read before the
   * next. Why not a record per scan: the JIT does not scalar-replace it in {@link #admit}, and it
   * was 6% of the bytes a replayed request allocated (JFR, shared-prefix page 64 at 65,536).
   */
  private static final class Scan {
    RadixNode lastDevice;
    RadixNode lastHost;
    int hostLength;
    List<LoadBack> loads;
    /** The copy of the tokens past the match, until the admitted request takes it. */
    final KeyCopy copy = new KeyCopy();
  }

  private final Scan lastScan = new Scan();

  /**
   * The namespace's root, made if missing once the tokens are checked (nothing can match in a new
   * namespace, so {@link #scan} would check them all anyway), so that a bad request leaves none.
   */
  private RadixNode rootFor(long namespace, int[] tokens) {
    RadixNode root = tree.rootFor(namespace, false);
    if (root == null) {
      checkTokens(tokens, 0, tokens.length);
      root = tree.rootFor(namespace, true);
    }
    return root;
  }

  /**
   * Matches the tokens and checks them: those past the match (the tree's own tokens were checked
   * when inserted), before the walk changes anything, so that a bad request leaves the tree as it
   * was. With {@code copyKey} (an admission) the page-aligned tokens past the match are copied
   * into the key store first and the copy is checked ({@link Scan#copy}, see {@link KeyCopy}).
   *
   * @throws InvalidTokenException if a token id is outside the vocabulary
   */
  private Scan scan(RadixNode root, int[] tokens, boolean copyKey) {
    int aligned = tokens.length - tokens.length % config.pageSize();
    int matched = tree.walk(root, tokens, 0, aligned);
    checkTokens(tokens, aligned, tokens.length);
    int[] copied = copyKey && matched < aligned
        ? tree.copyKey(lastScan.copy, tokens, matched, aligned)
        : null;
    if (copied == null) {
      checkTokens(tokens, matched, aligned);
    } else {
      // The check reads the copy, which the copy just brought into the cache.
      int offset = lastScan.copy.offset;
      if (!tokensValid(copied, offset, offset + aligned - matched)) {
        tree.releaseKey(lastScan.copy);
        checkTokens(tokens, matched, aligned);
      }
    }
    tree.completeWalk();
    RadixNode[] path = tree.path;
    int length = tree.pathLength;
    RadixNode lastDevice = root;
    List<LoadBack> pending = List.of();
    int i = 0;
    for (; i < length && path[i].resident(); i++) {
      lastDevice = path[i];
      LoadBack load = lastDevice.pendingLoad;
      if (load != null && !pending.contains(load)) {
        if (pending.isEmpty()) {
          pending = new ArrayList<>(2);
        }
        pending.add(load);
      }
    }
    if (pending.size() > 1) {
      pending.sort(java.util.Comparator.comparingLong(LoadBack::sequence));
    }
    RadixNode lastHost = lastDevice;
    for (; i < length && path[i].hostSlots != null; i++) {
      lastHost = path[i];
    }
    Scan scan = lastScan;
    scan.lastDevice = lastDevice;
    scan.lastHost = lastHost;
    scan.hostLength = lastHost.depth - lastDevice.depth;
    scan.loads = pending;
    return scan;
  }

  /**
   * Admits a request in namespace 0 with the default options (load-back of any size).
   *
   * @param requestId the caller's id for the request, not active
   * @param tokens the prompt's token ids; kept by reference until the request ends
   * @return the locked prefix
   * @see #admit(long, int[], RequestOptions)
   */
  public Admission admit(long requestId, int[] tokens) {
    return admit(requestId, tokens, RequestOptions.DEFAULT);
  }

  /**
   * Admits a request: matches its prompt, locks the device prefix until the request finishes or
   * aborts, and loads the host hit back when it is at least {@code loadBackThreshold} pages and
   * at most the quota (evicting device pages if needed; all or nothing).
   *
   * @param requestId the caller's id for the request, not active
   * @param tokens the prompt's token ids; kept by reference until the request ends, and not to
   *     be changed meanwhile. The page-aligned tokens past the match are checked and copied now,
   *     and an insert of this array caches that copy, so a token changed against this rule
   *     never reaches the tree unchecked
   * @param options namespace, priority, load-back quota
   * @return the locked prefix and the load to wait for, if any
   * @throws IllegalStateException if {@code requestId} is already active
   * @throws InvalidTokenException if a token id is outside the vocabulary
   */
  public Admission admit(long requestId, int[] tokens, RequestOptions options) {
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(options, "options");
    if (requests.get(requestId) != null) {
      throw new IllegalStateException("admit of request id=" + requestId
          + ": already active; finish or abort it before admitting the id again");
    }
    if (l3 != null) {
      Prefetch p = l3.byRequest.get(requestId);
      if (p != null && p.state != Prefetch.State.DONE) {
        throw new IllegalStateException("admit of request id=" + requestId + ": its L3 prefetch"
            + " is still " + p.state + "; admit it once prefetchState says DONE, or cancel it");
      }
    }
    RadixNode root = rootFor(options.namespace(), tokens);
    Scan scan = scan(root, tokens, true);
    try {
      if (rules.accessClock != null) {
        restampWalkedPath();
      }
      RadixNode locked = scan.lastDevice;
      tree.lock(locked);
      int loaded = 0;
      List<LoadBack> pending = scan.loads;
      if (scan.hostLength > 0 && options.loadBackQuotaPages() > 0) {
        LoadBack load = transfers.loadBack(scan.lastDevice, scan.lastHost,
            options.loadBackQuotaPages());
        if (load != null) {
          tree.lock(scan.lastHost);
          tree.unlock(scan.lastDevice);
          locked = scan.lastHost;
          loaded = scan.hostLength;
          pending = new ArrayList<>(pending);
          pending.add(load);
        }
      }
      if (l3 != null) {
        // Released only now that the request's own lock holds what it found.
        PrefetchOutcome outcome = l3.take(requestId);
        if (outcome != null) {
          lastOutcome = outcome;
        }
      }
      RequestState state = states.take(requestId, options.namespace(), options.priority(),
          tokens, locked, locked.depth);
      state.missKey = tree.walkMissKey;
      state.missKeyPos = tree.walkMissPos;
      state.keyCopy.takeFrom(scan.copy);
      requests.put(requestId, state);
      return new Admission(requestId, locked.depth, scan.hostLength, loaded,
          pending, locked, scan.lastHost);
    } finally {
      // Taken by the request unless something failed on the way.
      tree.releaseKey(scan.copy);
    }
  }

  // ---------------------------------------------------------------- allocation

  /**
   * Allocates device pages for a request's uncached tokens, evicting when the pool is short.
   * All or nothing.
   *
   * @param requestId an active request
   * @param pages pages wanted, at least 0
   * @return the new slots, in the order the request's tokens use them
   * @throws PoolExhaustedException if eviction cannot free enough pages
   */
  public int[] allocate(long requestId, int pages) {
    RequestState r = request("allocate", requestId);
    if (pages < 0) {
      throw new IllegalArgumentException("allocate of request id=" + requestId + ": pages="
          + pages + " must be >= 0");
    }
    if (pages == 0) {
      return new int[0];
    }
    addPages(r, pages);
    return r.own.toArray(r.ownCount() - pages, pages, tree.devicePool);
  }

  /**
   * Allocates the pages a request needs to hold the KV of its first {@code totalTokens} tokens.
   *
   * @param requestId an active request
   * @param totalTokens tokens the request's pages must cover, prefix included
   * @return the new slots (empty if it already has enough)
   * @throws PoolExhaustedException if eviction cannot free enough pages
   */
  public int[] allocateTokens(long requestId, int totalTokens) {
    RequestState r = request("allocateTokens", requestId);
    int needed = pagesMissing(r, totalTokens);
    return needed <= 0 ? new int[0] : allocate(requestId, needed);
  }

  /**
   * Allocates like {@link #allocateTokens} without returning the new slots: for a scheduler that
   * reads the page table with {@link #copyPageTable} into a row of its own, and so does not pay
   * for a fresh copy of every new slot (at page size 1, one int per uncached token).
   *
   * @param requestId an active request
   * @param totalTokens tokens the request's pages must cover, prefix included
   * @return the number of pages allocated now, 0 if it already had enough
   * @throws PoolExhaustedException if eviction cannot free enough pages
   */
  public int growTo(long requestId, int totalTokens) {
    RequestState r = request("growTo", requestId);
    int needed = pagesMissing(r, totalTokens);
    if (needed <= 0) {
      return 0;
    }
    addPages(r, needed);
    return needed;
  }

  private int pagesMissing(RequestState r, int totalTokens) {
    int pageSize = config.pageSize();
    int held = r.prefixLength / pageSize + r.ownCount();
    return (int) (((long) totalTokens + pageSize - 1) / pageSize) - held;
  }

  private void addPages(RequestState r, int pages) {
    if (rules.allocationFailure != null && rules.allocationFailure.getAsBoolean()) {
      // The broken variant of ARCHITECTURE §4 rule 4: an outcome no other rank agreed to.
      throw new PoolExhaustedException("device", pages, tree.devicePool.free(),
          (int) (tree.deviceProtected + tree.requestPages), (int) transfers.writeBackPages);
    }
    ensureFree(pages);
    tree.devicePool.allocate(pages, r.own);
    tree.requestPages += pages;
  }

  private void ensureFree(int pages) {
    int free = tree.devicePool.free();
    if (free < pages) {
      transfers.evictDevice(pages - free);
      free = tree.devicePool.free();
      if (free < pages) {
        throw new PoolExhaustedException("device", pages, free,
            (int) (tree.deviceProtected + tree.requestPages), (int) transfers.writeBackPages);
      }
    }
  }

  /**
   * The request's page table: the slots of its locked prefix followed by its own pages.
   *
   * @param requestId an active request
   * @return a new array
   */
  public int[] pageTable(long requestId) {
    RequestState r = request("pageTable", requestId);
    int[] prefix = tree.pathDeviceSlots(r.lockNode);
    int[] table = Arrays.copyOf(prefix, prefix.length + r.ownCount());
    r.own.copyTo(0, r.ownCount(), table, prefix.length, tree.devicePool);
    return table;
  }

  /**
   * Copies the request's page table (the slots of its locked prefix, then its own pages) into a
   * caller-owned row, without allocating.
   *
   * @param requestId an active request
   * @param dst the destination
   * @param offset where the first slot goes
   * @return the number of slots written
   * @throws IndexOutOfBoundsException if {@code dst} is too short, naming the sizes
   */
  public int copyPageTable(long requestId, int[] dst, int offset) {
    RequestState r = request("copyPageTable", requestId);
    Objects.requireNonNull(dst, "dst");
    int prefixPages = r.prefixLength / config.pageSize();
    int total = prefixPages + r.ownCount();
    if (offset < 0 || offset + total > dst.length) {
      throw new IndexOutOfBoundsException("copyPageTable of request id=" + requestId + ": "
          + total + " slots at offset=" + offset + " do not fit dst.length=" + dst.length);
    }
    for (RadixNode n = r.lockNode; n.parent != null; n = n.parent) {
      n.copyDeviceSlots(dst, offset + (n.depth - n.keyLength) / config.pageSize(),
          tree.devicePool);
    }
    r.own.copyTo(0, r.ownCount(), dst, offset + prefixPages, tree.devicePool);
    return total;
  }

  // ---------------------------------------------------------------- finish, chunk, abort

  /**
   * Finishes a request whose KV covers exactly its admitted tokens.
   *
   * @param requestId an active request
   * @return the length that was already cached on the device before this insert
   * @see #finish(long, int[])
   */
  public int finish(long requestId) {
    RequestState r = request("finish", requestId);
    return finish(requestId, r.tokens);
  }

  /**
   * Finishes a request: inserts the page-aligned part of {@code tokens} with the request's pages
   * (HICACHE-SPEC §3), frees the pages that duplicate what the tree already had and those past
   * the last full page, and releases the request's lock. A prepared backup is resolved here: the
   * insert is split at the backup's end, the backup is attached to the node holding exactly its
   * pages if the replicated predicate holds, and rolled back otherwise (see {@link
   * #prepareBackup}).
   *
   * @param requestId an active request
   * @param tokens every token whose KV the request's pages hold (prompt and output); starts with
   *     the admitted prompt's cached prefix
   * @return the length that was already cached on the device before this insert
   * @throws UnknownRequestException if the request is not active
   * @throws IllegalArgumentException if the tokens do not fit the request's pages or prefix
   */
  public int finish(long requestId, int[] tokens) {
    RequestState r = request("finish", requestId);
    checkRequestTokens("finish", r, tokens, tokens == null ? 0 : tokens.length);
    requests.remove(requestId);
    int aligned = tokens.length - tokens.length % config.pageSize();
    int cached = r.prefixLength;
    int consumed = 0;
    RadixNode deepest = r.lockNode;
    if (CacheTree.pathValid(r.lockNode)) {
      cached = insertOwn(r, tokens, aligned);
      consumed = (tree.insertEnd - r.prefixLength) / config.pageSize();
      deepest = tree.lastInsertNode;
    }
    if (r.prepared != null) {
      prepared.rollBack(r);
    }
    r.own.release(tree.devicePool, consumed, r.ownCount() - consumed);
    tree.requestPages -= r.ownCount() - consumed;
    tree.unlock(r.lockNode);
    tree.releaseKey(r.keyCopy);
    states.give(r);
    if (rules.accessClock != null) {
      restamp(deepest);
    }
    return cached;
  }

  /**
   * Counts the hits on the request's locked path and inserts its computed pages; a prepared
   * backup is resolved on the way (attached or rolled back).
   */
  private int insertOwn(RequestState r, int[] tokens, int aligned) {
    tree.hitPath(r.lockNode, r.priority);
    // The admission's key and copy are of the admitted array; another array may differ past
    // the prefix.
    if (tokens == r.tokens) {
      tree.knownKeyPos = r.missKeyPos;
      tree.knownKey = r.missKey;
      tree.insertCopy.set(r.keyCopy);
    }
    try {
      if (r.prepared != null) {
        return prepared.insert(r, tokens, aligned);
      }
      return tree.insert(r.lockNode, tokens, r.prefixLength, aligned, r.own, 0, r.priority);
    } finally {
      tree.knownKeyPos = -1;
      tree.insertCopy.chunk = -1;
    }
  }

  /**
   * Caches a chunked prefill's progress: inserts the computed page-aligned prefix of the
   * admitted tokens and keeps the request active, its lock moved to the end of the inserted
   * prefix. An insert resolves the request's prepared backup as {@link #finish} does; one that
   * covers only part of the backup's pages rolls it back.
   *
   * @param requestId an active request
   * @param computedTokens tokens whose KV the request has computed so far
   * @return the request's page table afterwards (the tree's slots replace duplicates)
   */
  public int[] cacheChunk(long requestId, int computedTokens) {
    RequestState r = request("cacheChunk", requestId);
    return cacheChunk(requestId, r.tokens, computedTokens);
  }

  /**
   * Caches a chunked prefill's progress over a token array that may have grown.
   *
   * @param requestId an active request
   * @param tokens the request's tokens; starts with the admitted prompt's cached prefix; kept by
   *     reference from now on
   * @param computedTokens tokens of {@code tokens} whose KV the request has computed
   * @return the request's page table afterwards
   */
  public int[] cacheChunk(long requestId, int[] tokens, int computedTokens) {
    RequestState r = request("cacheChunk", requestId);
    checkRequestTokens("cacheChunk", r, tokens, computedTokens);
    if (computedTokens > tokens.length) {
      throw new IllegalArgumentException("cacheChunk of request id=" + requestId
          + ": computedTokens=" + computedTokens + " exceeds tokens.length=" + tokens.length);
    }
    if (tokens != r.tokens) {
      // The admission's first-page key and key copy are of the old array.
      r.missKeyPos = -1;
      tree.releaseKey(r.keyCopy);
      r.tokens = tokens;
    }
    int pageSize = config.pageSize();
    int aligned = computedTokens - computedTokens % pageSize;
    if (aligned > r.prefixLength && CacheTree.pathValid(r.lockNode)) {
      insertOwn(r, tokens, aligned);
      int end = tree.insertEnd;
      RadixNode last = tree.lastInsertNode;
      int consumed = (end - r.prefixLength) / pageSize;
      if (end > r.prefixLength) {
        tree.lock(last);
        tree.unlock(r.lockNode);
        r.lockNode = last;
        r.prefixLength = end;
      }
      // The tree took the consumed pages' runs; the rest moves to the front.
      r.own.dropFront(consumed);
      if (rules.accessClock != null) {
        restamp(last);
      }
    }
    return pageTable(requestId);
  }

  /**
   * Aborts a request: frees its own pages and releases its lock; nothing is inserted. Its
   * prepared backup is rolled back (host slots written by streamed copies are retired through
   * the write FIFO and freed at that ack's commit).
   *
   * @param requestId an active request
   * @throws UnknownRequestException if the request is not active
   */
  public void abort(long requestId) {
    RequestState r = request("abort", requestId);
    requests.remove(requestId);
    if (r.prepared != null) {
      prepared.rollBack(r);
    }
    r.own.release(tree.devicePool, 0, r.ownCount());
    tree.requestPages -= r.ownCount();
    tree.unlock(r.lockNode);
    tree.releaseKey(r.keyCopy);
    states.give(r);
  }

  /**
   * Whether a request is active (admitted, not finished or aborted).
   *
   * @param requestId the id
   * @return true if active
   */
  public boolean isActive(long requestId) {
    return requests.get(requestId) != null;
  }

  /**
   * The number of active requests.
   *
   * @return the count
   */
  public int activeRequests() {
    return requests.size();
  }

  private RequestState request(String operation, long requestId) {
    RequestState r = requests.get(requestId);
    if (r == null) {
      throw new UnknownRequestException(operation, requestId);
    }
    return r;
  }

  private void checkRequestTokens(String operation, RequestState r, int[] tokens, int used) {
    Objects.requireNonNull(tokens, "tokens");
    int pageSize = config.pageSize();
    long held = r.prefixLength + (long) r.ownCount() * pageSize;
    if (used < r.prefixLength) {
      throw new IllegalArgumentException(operation + " of request id=" + r.id + ": " + used
          + " tokens is shorter than the request's cached prefix of " + r.prefixLength
          + " tokens; pass the request's whole token sequence");
    }
    if (used > held) {
      throw new IllegalArgumentException(operation + " of request id=" + r.id + ": " + used
          + " tokens need KV pages but the request holds pages for only " + held
          + " tokens; allocate the missing pages first");
    }
    if (tokens != r.tokens) {
      checkTokens(tokens, 0, tokens.length);
      int m = Arrays.mismatch(tokens, 0, r.prefixLength, r.tokens, 0, r.prefixLength);
      if (m >= 0) {
        throw new IllegalArgumentException(operation + " of request id=" + r.id
            + ": tokens differ from the admitted prompt at index " + m + " (" + tokens[m]
            + " != " + r.tokens[m] + ") within the cached prefix of " + r.prefixLength
            + " tokens; pass the admitted tokens followed by the new ones");
      }
    }
  }

  private void checkTokens(int[] tokens, int from, int to) {
    int vocab = config.vocabSize();
    if (!tokensValid(tokens, from, to)) {
      for (int i = from; i < to; i++) {
        if (tokens[i] < 0 || tokens[i] >= vocab) {
          throw new InvalidTokenException(tokens[i], i, vocab);
        }
      }
    }
  }

  /** Whether every token of {@code tokens[from, to)} is in the vocabulary. */
  private boolean tokensValid(int[] tokens, int from, int to) {
    int last = config.vocabSize() - 1;
    // An OR of t and (vocab-1-t) is negative iff some t is out of range; an OR reduction
    // vectorizes, a min/max pair or an early exit does not as well (measured ~0.25 us per
    // 2176 tokens before).
    int signs = 0;
    for (int i = from; i < to; i++) {
      int t = tokens[i];
      signs |= t | (last - t);
    }
    return signs >= 0;
  }

  // ---------------------------------------------------------------- locks, backups, eviction

  /**
   * Locks a node and its ancestors against eviction (for example the anchor of an L3 prefetch).
   *
   * @param node a node of this cache that is still in the tree
   * @return the lock, to pass to {@link #unlock(CacheLock)} once
   */
  public CacheLock lock(RadixNode node) {
    checkNode("lock", node);
    if (node.invalid != 0) {
      throw new IllegalStateException("lock of node id=" + node.id
          + ": its pages belong to a failed load-back; match again");
    }
    tree.lock(node);
    CacheLock lock = new CacheLock(this, ++lockSerial, node);
    locks.put(lock.serial, lock);
    return lock;
  }

  /**
   * Releases a lock taken with {@link #lock(RadixNode)}.
   *
   * @param lock the lock
   * @throws IllegalStateException if it was already released
   */
  public void unlock(CacheLock lock) {
    Objects.requireNonNull(lock, "lock");
    if (lock.owner != this) {
      throw new IllegalArgumentException(lock + " belongs to another cache");
    }
    if (lock.released) {
      throw new IllegalStateException(
          lock + " was already released: release each lock exactly once");
    }
    lock.released = true;
    locks.remove(lock.serial);
    tree.unlock(lock.node);
  }

  /**
   * Registers a backup (device to host copy) of a resident node whose parent is backed up.
   *
   * @param node a node of this cache
   * @return true if registered; false if there is no host tier, the node is already backed up,
   *     not on the device, its parent has no backup, or host pages are short
   * @throws IllegalStateException if the node's backup is {@code PENDING}: a second backup of a
   *     pending node is a bug
   */
  public boolean backup(RadixNode node) {
    checkNode("backup", node);
    if (node.backupState == BackupState.PENDING) {
      throw new IllegalStateException("backup of node id=" + node.id + ": its backup (write "
          + node.pendingWrite.sequence + ") is still PENDING; attaching a second backup is a"
          + " bug, wait for commitWrites");
    }
    return transfers.registerBackup(node, false, false);
  }

  private void checkNode(String operation, RadixNode node) {
    Objects.requireNonNull(node, "node");
    RadixNode root = node;
    while (root.parent != null) {
      root = root.parent;
    }
    if (node.deleted || tree.roots.get(root.namespace) != root) {
      throw new IllegalArgumentException(operation + " of node id=" + node.id
          + ": the node is not in this cache's tree (removed, or from another cache); match"
          + " again");
    }
  }

  /**
   * Evicts device pages in policy order (what {@link #allocate} does when the pool is short).
   *
   * @param pages pages wanted
   * @return pages freed now (write-back victims are freed at their backup's commit)
   */
  public int evictDevice(int pages) {
    return transfers.evictDevice(pages);
  }

  /**
   * Evicts host-only leaves in policy order.
   *
   * @param pages pages wanted
   * @return pages freed
   */
  public int evictHost(int pages) {
    return transfers.evictHost(pages);
  }

  // ---------------------------------------------------------------- the commit protocol

  /**
   * Rank-local: how many write acks from the head of the write FIFO have finished copying,
   * asked without blocking. Decides nothing by itself; feed it (or a MIN across ranks) to {@link
   * #commitWrites(int)}.
   *
   * @return the ready prefix
   */
  public int readyWritePrefix() {
    return progress.readyWritePrefix();
  }

  /**
   * Rank-local: how many load acks from the head of the load FIFO have finished copying.
   *
   * @return the ready prefix
   */
  public int readyLoadPrefix() {
    return progress.readyLoadPrefix();
  }

  /**
   * Rank-local: which of the first {@code n} write acks failed to copy on this rank.
   *
   * @param n acks, at most {@link #readyWritePrefix()}
   * @return the failed indices
   */
  public BitSet localWriteFailures(int n) {
    return progress.localWriteFailures(n);
  }

  /**
   * Rank-local: which of the first {@code n} load acks failed to copy on this rank.
   *
   * @param n acks, at most {@link #readyLoadPrefix()}
   * @return the failed indices
   */
  public BitSet localLoadFailures(int n) {
    return progress.localLoadFailures(n);
  }

  /**
   * Commits the first {@code n} write acks with this rank's own failure status.
   *
   * @param n acks, at most {@link #readyWritePrefix()}
   */
  public void commitWrites(int n) {
    transfers.commitWrites(n, progress.localWriteFailures(n));
  }

  /**
   * Replicated: commits exactly {@code n} write acks from the head of the FIFO. A committed
   * backup becomes {@code COMMITTED} and visible; one in {@code failed} (or below a parent that is
   * not committed) is rolled back and its host slots freed. Write-back victims are demoted.
   *
   * @param n acks; every rank must have finished copying them
   * @param failed indices (0-based from the head) to roll back, agreed across ranks
   */
  public void commitWrites(int n, BitSet failed) {
    transfers.commitWrites(n, Objects.requireNonNull(failed, "failed"));
  }

  /**
   * Commits the first {@code n} load acks with this rank's own failure status.
   *
   * @param n acks, at most {@link #readyLoadPrefix()}
   */
  public void commitLoads(int n) {
    transfers.commitLoads(n, progress.localLoadFailures(n));
  }

  /**
   * Replicated: commits exactly {@code n} load acks: the chains are unlocked. A load in {@code
   * failed} invalidates its pages (and what was computed on them) as described in {@link
   * LoadBack#failed()}.
   *
   * @param n acks; every rank must have finished copying them
   * @param failed indices to treat as failed, agreed across ranks
   */
  public void commitLoads(int n, BitSet failed) {
    transfers.commitLoads(n, Objects.requireNonNull(failed, "failed"));
  }

  /**
   * Replicated: pending backups plus pending loads. The per-tick sync may be skipped iff 0.
   *
   * @return the count
   */
  public int outstandingOperations() {
    return transfers.outstanding() + (l3 == null ? 0 : l3.outstanding());
  }

  /**
   * Replicated: write acks not yet committed.
   *
   * @return the count
   */
  public int pendingWrites() {
    return transfers.writes.size();
  }

  /**
   * Replicated: load acks not yet committed.
   *
   * @return the count
   */
  public int pendingLoads() {
    return transfers.loads.size();
  }

  /**
   * The single-rank sync: commits every write and load ack that has finished copying.
   *
   * @return acks committed
   */
  public int sync() {
    if (outstandingOperations() == 0) {
      return 0;
    }
    int writes = readyWritePrefix();
    commitWrites(writes);
    int loads = readyLoadPrefix();
    commitLoads(loads);
    int l3Writes = 0;
    int prefetches = 0;
    if (l3 != null) {
      l3Writes = readyL3WritePrefix();
      commitL3Writes(l3Writes, localL3WriteFailures(l3Writes));
      prefetches = pendingPrefetches();
      long[] progress = new long[PREFETCH_SYNC_WIDTH * prefetches];
      localPrefetchProgress(progress, 0);
      commitPrefetches(progress, 0, prefetches);
    }
    return writes + loads + l3Writes + prefetches;
  }

  // ---------------------------------------------------------------- the L3 tier

  /** Reduction elements per pending prefetch in {@link #localPrefetchProgress}. */
  public static final int PREFETCH_SYNC_WIDTH = L3Tier.PREFETCH_WIDTH;

  /**
   * Whether this cache has an L3 tier.
   *
   * @return true if built with an {@link L3Setup}
   */
  public boolean hasL3() {
    return l3 != null;
  }

  /**
   * The L3 settings.
   *
   * @return the settings, or empty without an L3 tier
   */
  public Optional<io.kvtier.core.config.L3Config> l3Config() {
    return l3 == null ? Optional.empty() : Optional.of(l3.config);
  }

  /**
   * Replicated: starts an L3 prefetch for a request before its admission (HICACHE-SPEC §12), if
   * the page-aligned part of {@code tokens} beyond its host hit is at least {@code
   * prefetchThreshold} tokens and the last node of the host hit is the root or a committed host
   * copy. Like a match it touches the nodes passed. The prefetch locks that node, asks the store
   * (in the background) how many of the pages it has, and from then on advances only at the
   * sync: the ranks agree on the hit (MIN), reserve host slots, fetch, decide by the policy and
   * insert the pages every rank has as host-only nodes. Admit the request once {@link
   * #prefetchState} says {@code DONE}; its admission loads the pages back like any host hit.
   *
   * @param requestId the request, not active and without a prefetch
   * @param tokens the tokens the request will be admitted with; kept by reference until it is
   *     admitted or cancelled
   * @param options the namespace is read
   * @return true if a prefetch started; false without an L3 tier or when the request does not
   *     qualify
   * @throws IllegalStateException if the request is active or already has a prefetch
   */
  public boolean startPrefetch(long requestId, int[] tokens, RequestOptions options) {
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(options, "options");
    if (l3 == null) {
      return false;
    }
    if (requests.get(requestId) != null) {
      throw new IllegalStateException("startPrefetch of request id=" + requestId
          + ": the request is active; prefetch before admitting it");
    }
    checkTokens(tokens, 0, tokens.length);
    RadixNode root = rootFor(options.namespace(), tokens);
    Scan scan = scan(root, tokens, false);
    int aligned = tokens.length - tokens.length % config.pageSize();
    boolean started = l3.start(requestId, options.namespace(), tokens, aligned, scan.lastHost);
    tree.maybeDropRoot(root);
    return started;
  }

  /** Where a request's L3 prefetch stands. */
  public enum PrefetchState {
    /** The request has no prefetch (never started, admitted, or cancelled). */
    NONE,
    /** Probing or fetching: do not admit the request yet. */
    RUNNING,
    /** Decided: the pages are in the tree; admit the request. */
    DONE
  }

  /**
   * Replicated: where a request's prefetch stands.
   *
   * @param requestId the request
   * @return the state
   */
  public PrefetchState prefetchState(long requestId) {
    Prefetch p = l3 == null ? null : l3.byRequest.get(requestId);
    if (p == null) {
      return PrefetchState.NONE;
    }
    return p.state == Prefetch.State.DONE ? PrefetchState.DONE : PrefetchState.RUNNING;
  }

  /**
   * Replicated: what the prefetch of the most recently admitted request that had one inserted;
   * read it right after {@link #admit} to count L3 hit tokens.
   *
   * @param requestId the request just admitted
   * @return the outcome, or empty if that request had no prefetch
   */
  public Optional<PrefetchOutcome> admittedPrefetch(long requestId) {
    PrefetchOutcome o = lastOutcome;
    return o != null && o.requestId() == requestId ? Optional.of(o) : Optional.empty();
  }

  /**
   * Replicated: ends a request's prefetch because the request is aborted (or will not be
   * admitted). Host slots a fetch may still be writing are freed once every rank's fetch has
   * stopped; nodes already inserted stay in the tree.
   *
   * @param requestId the request; nothing happens if it has no prefetch
   */
  public void cancelPrefetch(long requestId) {
    if (l3 != null) {
      l3.cancel(requestId);
    }
  }

  /**
   * Replicated: L3 writes not yet committed.
   *
   * @return the count
   */
  public int pendingL3Writes() {
    return l3 == null ? 0 : l3.writes.size();
  }

  /**
   * Replicated: prefetches probing, fetching or draining; each takes {@link
   * #PREFETCH_SYNC_WIDTH} elements of the fused reduction.
   *
   * @return the count
   */
  public int pendingPrefetches() {
    return l3 == null ? 0 : l3.pending.size();
  }

  /**
   * Rank-local: how many L3 writes from the head of the FIFO have finished on this rank.
   *
   * @return the ready prefix
   */
  public int readyL3WritePrefix() {
    return l3 == null ? 0 : l3Progress.readyPutPrefix();
  }

  /**
   * Rank-local: which of the first {@code n} L3 writes failed on this rank.
   *
   * @param n writes, at most {@link #readyL3WritePrefix()}
   * @return the failed indices
   */
  public BitSet localL3WriteFailures(int n) {
    return l3 == null ? new BitSet() : l3Progress.putFailures(n);
  }

  /**
   * Replicated: commits exactly {@code n} L3 writes: their nodes' host copies lose the
   * protection, and the nodes are marked as stored unless the write is in {@code failed}.
   *
   * @param n writes; every rank must have finished them
   * @param failed indices (0-based from the head) that failed on some rank
   */
  public void commitL3Writes(int n, BitSet failed) {
    Objects.requireNonNull(failed, "failed");
    if (l3 == null) {
      if (n != 0) {
        throw new IllegalArgumentException("cannot commit " + n + " L3 writes: no L3 tier");
      }
      return;
    }
    l3.commitWrites(n, failed);
  }

  /**
   * Rank-local: this rank's {@link #PREFETCH_SYNC_WIDTH} values per pending prefetch, in the
   * replicated order: pages found or fetched (MIN), -1 if this rank gave up (MIN of it is the
   * MAX of "gave up"), 1 if this rank's work has stopped (MIN: every rank's has).
   *
   * @param into where to write {@code PREFETCH_SYNC_WIDTH * pendingPrefetches()} values
   * @param offset the first index
   */
  public void localPrefetchProgress(long[] into, int offset) {
    Objects.requireNonNull(into, "into");
    if (l3 != null) {
      Objects.checkFromIndexSize(offset, PREFETCH_SYNC_WIDTH * l3.pending.size(),
          into.length);
      l3Progress.prefetchProgress(l3.pending, into, offset);
    }
  }

  /**
   * Replicated: applies the agreed (MIN-reduced) values of the first {@code count} pending
   * prefetches: a finished probe reserves host slots and starts the fetch, a fetch is decided by
   * the policy and its agreed pages inserted, a drained reservation is freed.
   *
   * @param agreed the reduced values
   * @param offset where the first prefetch's values are
   * @param count prefetches covered, the {@link #pendingPrefetches()} the values were taken for
   */
  public void commitPrefetches(long[] agreed, int offset, int count) {
    Objects.requireNonNull(agreed, "agreed");
    if (l3 == null) {
      if (count != 0) {
        throw new IllegalArgumentException("cannot commit " + count + " prefetches: no L3 tier");
      }
      return;
    }
    l3.commitPrefetches(agreed, offset, count);
  }

  /**
   * The replicated counters of the L3 tier.
   *
   * @return a snapshot; {@link L3Stats#NONE} without an L3 tier
   */
  public L3Stats l3Stats() {
    return l3 == null ? L3Stats.NONE : l3.stats();
  }

  // ---------------------------------------------------------------- inspection

  /**
   * The device pool's accounting.
   *
   * @return capacity, free, evictable and protected pages
   */
  public PoolUsage deviceUsage() {
    return new PoolUsage(tree.devicePool.capacity(), tree.devicePool.free(),
        (int) tree.deviceEvictable, (int) (tree.deviceProtected + tree.requestPages));
  }

  /**
   * The host pool's accounting.
   *
   * @return capacity, free, evictable and protected pages
   */
  public PoolUsage hostUsage() {
    return new PoolUsage(tree.hostPool.capacity(), tree.hostPool.free(),
        (int) tree.hostEvictable, (int) (tree.hostProtected + transfers.reservedHostPages));
  }

  /**
   * The logical clock: bumped at every touch and node creation, never the wall clock.
   *
   * @return the clock value
   */
  public long logicalClock() {
    return tree.clock;
  }

  /**
   * The number of tree nodes, roots excluded.
   *
   * @return the count
   */
  public int nodeCount() {
    return tree.nodeCount;
  }

  /**
   * The chained SHA-256 keys of a node's pages (computed now if not yet known).
   *
   * @param node a node of this cache
   * @return one key per page of the node
   */
  public List<PageKey> pageKeys(RadixNode node) {
    checkNode("pageKeys", node);
    if (node.parent != null) {
      tree.pageHashes(node);
    }
    List<PageKey> keys = new ArrayList<>(node.pageCount);
    if (node.pageHashes != null) {
      for (byte[] h : node.pageHashes) {
        keys.add(PageKey.of(h));
      }
    }
    return keys;
  }

  /**
   * The page keys of a page-aligned token sequence in a namespace.
   *
   * @param namespace the namespace
   * @param tokens whole pages of token ids
   * @return one key per page
   * @throws MisalignedKeyException if the length is not a whole number of pages
   */
  public List<PageKey> pageKeys(long namespace, int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    checkTokens(tokens, 0, tokens.length);
    return PageHasher.pageKeys(namespace, tokens, config.pageSize());
  }

  // ---------------------------------------------------------------- prepared backups

  /**
   * Reserves a prepared backup (HICACHE-SPEC §11) for the request's own full pages, so that the
   * model can stream each finished layer to the host with {@link #streamLayer} while it computes
   * the next one. Call it after {@link #allocate} and before the forward pass, at the same point
   * on every rank: the outcome is replicated.
   *
   * <p>It covers the request's own pages that are fully covered by its admitted tokens (a tail
   * shorter than a page is never cached). Host slots are reserved now, evicting host-only leaves
   * if short; all or nothing. At the request's insert ({@link #finish} or {@link #cacheChunk})
   * the backup is attached to the tree node that holds exactly its pages if the replicated attach
   * predicate holds (node extent equals the backup's, node not backed up and not {@code PENDING},
   * parent backed up): the node becomes {@code PENDING} and one ack joins the write FIFO, with a
   * catch-up copy of every layer that was not streamed. Otherwise, and at {@link #abort}, it is
   * rolled back.
   *
   * <p>A request has at most one prepared backup. Calling this again before any layer was
   * streamed extends the backup over pages allocated since (all or nothing; on false the
   * existing backup stays as it was); once a layer was streamed the backup cannot grow. With a
   * chunked prefill prepare once per chunk: allocate, prepare, stream, {@link #cacheChunk}
   * (which resolves the backup if it inserts any of its pages), then the next chunk.
   *
   * @param requestId an active request
   * @return true if every own full page of the request is covered by its prepared backup now;
   *     false when there is no host tier or transfer engine, the write policy is write_back, the
   *     request has no full own page, or the host cannot hold the pages
   * @throws UnknownRequestException if the request is not active
   * @throws IllegalStateException if the backup has streamed layers and would have to grow
   */
  public boolean prepareBackup(long requestId) {
    return prepared.prepare(request("prepareBackup", requestId));
  }

  /**
   * Streams one layer of the request's prepared backup: the model has finished writing {@code
   * layer} of the request's own pages, and one device-to-host batch for that layer is submitted
   * into the reserved host slots. A replicated call (every rank calls it at the same point of its
   * forward pass); only the copy's completion is rank-local, and it reaches the tree only through
   * the MIN commit of the ack the backup joins at attach. The model must not write the layer's
   * pages again afterwards.
   *
   * @param requestId an active request with a prepared backup
   * @param layer the finished layer, {@code 0 <= layer < layers}
   * @throws UnknownRequestException if the request is not active
   * @throws IllegalStateException if the request has no prepared backup, or the layer was
   *     streamed already
   * @throws IllegalArgumentException if the layer is out of range
   */
  public void streamLayer(long requestId, int layer) {
    prepared.stream(request("streamLayer", requestId), layer);
  }

  // ---------------------------------------------------------------- digest and stats

  /**
   * A 64-bit hash of all replicated state of this cache, for the rank protocol's divergence
   * check (ARCHITECTURE §5): equal on ranks that took the same decisions, and different (up to
   * hash collisions) as soon as any replicated field differs.
   *
   * <p>It covers, per tree node of every namespace: id, parent id, namespace, key tokens and
   * length, the device-resident and host-backed bits, the backup state and the pending write or
   * load it belongs to, the write-back flag, the failed-load marks, lockRef, hostRef, hitCount,
   * priority, lastAccess, created, the child counts, and the device and host slot numbers. The
   * allocators are deterministic, so slot numbers are replicated here; a backend whose allocation
   * were not deterministic would have to leave them out. It also covers the pool occupancy (free,
   * evictable, protected per pool, request pages, reserved host pages, pages awaiting
   * write-back), the logical clock, the node-id counter, the write and load FIFOs in order (per
   * ack: sequence, covered node ids and page counts, retired slots, the request of a prepared
   * backup), the active requests (id, namespace, priority, token count, lock node, prefix length,
   * own pages, and the prepared backup's extent, host slots and streamed layers), explicit node
   * locks, and the {@link #stats()} counters.
   *
   * <p>Page hashes are left out: they are a function of the keys. Copy completion is never read.
   * Nodes and requests are combined order-independently, so no hash-map iteration order can enter;
   * the FIFOs are combined in order. Costs time linear in the nodes, their key tokens and the
   * requests, and allocates no more than a walk stack.
   *
   * @return the digest
   */
  public long replicaDigest() {
    return ReplicaDigest.of(this);
  }

  /**
   * The replicated counters of this cache (prepared backups, backups, loads, evictions).
   *
   * @return a snapshot
   */
  public CacheStats stats() {
    return counters.snapshot();
  }

  // ---------------------------------------------------------------- the model's layer waits

  /**
   * Rank-local: whether layer {@code layer} of a load-back has been copied to this rank's device,
   * without blocking. Decides nothing in the cache; the model asks it before reading the layer.
   *
   * @param load a load of this cache, from {@link Admission#pendingLoads()}
   * @param layer the layer
   * @return true once the copy of that layer is done (or failed) here, or the load is committed
   * @throws IllegalArgumentException if the load belongs to another cache
   */
  public boolean isLoadLayerReady(LoadBack load, int layer) {
    checkLoad(load, layer);
    return load.committed || progress.isLoadLayerDone(load.sequence, layer);
  }

  /**
   * Rank-local: blocks until layer {@code layer} of a load-back is on this rank's device.
   *
   * @param load a load of this cache, from {@link Admission#pendingLoads()}
   * @param layer the layer
   * @throws io.kvtier.spi.TransferFailedException if the copy failed (here, or on some rank once
   *     the load was committed as failed): abort the request
   * @throws InterruptedException if interrupted
   */
  public void awaitLoadLayer(LoadBack load, int layer) throws InterruptedException {
    checkLoad(load, layer);
    if (load.committed) {
      if (load.failed) {
        throw LocalProgress.failedLoad(load, layer);
      }
      return;
    }
    progress.awaitLoadLayer(load.sequence, layer);
  }

  private void checkLoad(LoadBack load, int layer) {
    Objects.requireNonNull(load, "load");
    Objects.checkIndex(layer, load.layers);
    if (!load.committed && !transfers.loads.contains(load)) {
      throw new IllegalArgumentException(load + " is not a pending load of this cache: pass a"
          + " load from this cache's Admission.pendingLoads()");
    }
  }

  // ---------------------------------------------------------------- broken variants (tests)

  /** Re-stamps the nodes the last walk touched from the broken per-rank access clock. */
  private void restampWalkedPath() {
    for (int i = 0; i < tree.pathLength; i++) {
      stampFromRankClock(tree.path[i]);
    }
  }

  /** Re-stamps {@code deepest} and its ancestors from the broken per-rank access clock. */
  private void restamp(RadixNode deepest) {
    for (RadixNode n = deepest; n != null && n.parent != null; n = n.parent) {
      stampFromRankClock(n);
    }
  }

  private void stampFromRankClock(RadixNode n) {
    if (!n.deleted) {
      n.lastAccess = rules.accessClock.getAsLong();
      tree.keyChanged(n);
    }
  }

  // ---------------------------------------------------------------- package-private access

  CacheTree tree() {
    return tree;
  }

  Transfers transfers() {
    return transfers;
  }

  Evictor evictor() {
    return evictor;
  }

  LongMap<RequestState> requests() {
    return requests;
  }

  LongMap<CacheLock> locks() {
    return locks;
  }

  Optional<KvMemory> memory() {
    return memory;
  }

  RuleVariants rules() {
    return rules;
  }

  LocalProgress localProgress() {
    return progress;
  }

  PreparedBackups preparedBackups() {
    return prepared;
  }

  L3Tier l3() {
    return l3;
  }

  L3Progress l3Progress() {
    return l3Progress;
  }
}
