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
  private final Optional<KvMemory> memory;
  private final RuleVariants rules = new RuleVariants();
  private final CacheCounters counters = new CacheCounters();
  private final PoolLedger ledger;
  private final CacheTree tree;
  private final Evictor evictor;
  private final L3Port l3;
  private final Transfers transfers;
  private final PreparedBackups prepared;
  private final PrefixMatcher matcher;
  private final RequestTable requests;
  private final NodeLocks locks;
  private final CommitProtocol protocol;

  /** Builds the rooms bottom-up, each with its collaborators: nothing is wired afterwards. */
  private RankCache(CacheConfig config, Optional<KvMemory> memory, L3Setup l3Setup) {
    this.config = config;
    this.memory = memory;
    this.ledger = new PoolLedger(config.devicePages(), config.hostPages());
    this.tree = new CacheTree(config.pageSize(), config.evictionPolicy(), ledger);
    LocalProgress progress = new LocalProgress(memory.flatMap(KvMemory::engine).orElse(null));
    int layers = memory.map(KvMemory::layers).orElse(0);
    boolean hostTier = config.hostPages() > 0 && memory.flatMap(KvMemory::engine).isPresent();
    this.evictor = new Evictor(tree, counters);
    this.l3 = l3Setup == null
        ? L3Port.NONE
        : l3Room(l3Setup, memory.orElseThrow().host().orElseThrow(), tree, ledger, evictor);
    this.transfers = new Transfers(tree, ledger, evictor, l3, config, progress, layers, hostTier,
        counters);
    WriteTriggers triggers = new WriteTriggers(transfers, l3, config, hostTier);
    this.prepared = new PreparedBackups(tree, ledger, transfers, evictor, triggers, config,
        layers, hostTier, rules);
    this.matcher = new PrefixMatcher(tree, config.pageSize(), config.vocabSize(), rules);
    this.requests = new RequestTable(tree, ledger, matcher, transfers, prepared, triggers, l3,
        rules, config.pageSize());
    this.locks = new NodeLocks(tree);
    this.protocol = new CommitProtocol(progress, transfers, l3);
  }

  private static L3Room l3Room(L3Setup setup, HostMemory host, CacheTree tree, PoolLedger ledger,
      Evictor evictor) {
    L3Progress progress = new L3Progress(setup, host);
    return new L3Room(new L3Tier(setup.config(), tree, ledger, evictor, progress), progress);
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
    return new RankCache(config, Optional.empty(), null);
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
        Optional.empty(), device.spec().layout().layers())), null);
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
    return new RankCache(config, Optional.of(checkedMemory(config, device, host, transfers)),
        null);
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
    return matcher.match(namespace, tokens);
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
    return requests.admit(requestId, tokens, options);
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
    RequestState r = requests.get("allocate", requestId);
    if (pages < 0) {
      throw new IllegalArgumentException("allocate of request id=" + requestId + ": pages="
          + pages + " must be >= 0");
    }
    if (pages == 0) {
      return new int[0];
    }
    requests.addPages(r, pages);
    return r.own.toArray(r.ownCount() - pages, pages, ledger.devicePool);
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
    int needed = requests.pagesMissing(requests.get("allocateTokens", requestId), totalTokens);
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
    RequestState r = requests.get("growTo", requestId);
    int needed = requests.pagesMissing(r, totalTokens);
    if (needed <= 0) {
      return 0;
    }
    requests.addPages(r, needed);
    return needed;
  }

  /**
   * The request's page table: the slots of its locked prefix followed by its own pages.
   *
   * @param requestId an active request
   * @return a new array
   */
  public int[] pageTable(long requestId) {
    return requests.pageTable(requests.get("pageTable", requestId));
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
    RequestState r = requests.get("copyPageTable", requestId);
    Objects.requireNonNull(dst, "dst");
    return requests.copyPageTable(r, dst, offset);
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
    RequestState r = requests.get("finish", requestId);
    return requests.finish(r, r.tokens);
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
    return requests.finish(requests.get("finish", requestId), tokens);
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
    RequestState r = requests.get("cacheChunk", requestId);
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
    requests.cacheChunk(requests.get("cacheChunk", requestId), tokens, computedTokens);
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
    requests.abort(requests.get("abort", requestId));
  }

  /**
   * Whether a request is active (admitted, not finished or aborted).
   *
   * @param requestId the id
   * @return true if active
   */
  public boolean isActive(long requestId) {
    return requests.isActive(requestId);
  }

  /**
   * The number of active requests.
   *
   * @return the count
   */
  public int activeRequests() {
    return requests.size();
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
    return locks.lock(this, node);
  }

  /**
   * Releases a lock taken with {@link #lock(RadixNode)}.
   *
   * @param lock the lock
   * @throws IllegalStateException if it was already released
   */
  public void unlock(CacheLock lock) {
    locks.unlock(this, Objects.requireNonNull(lock, "lock"));
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
    return protocol.readyWritePrefix();
  }

  /**
   * Rank-local: how many load acks from the head of the load FIFO have finished copying.
   *
   * @return the ready prefix
   */
  public int readyLoadPrefix() {
    return protocol.readyLoadPrefix();
  }

  /**
   * Rank-local: which of the first {@code n} write acks failed to copy on this rank.
   *
   * @param n acks, at most {@link #readyWritePrefix()}
   * @return the failed indices
   */
  public BitSet localWriteFailures(int n) {
    return protocol.localWriteFailures(n);
  }

  /**
   * Rank-local: which of the first {@code n} load acks failed to copy on this rank.
   *
   * @param n acks, at most {@link #readyLoadPrefix()}
   * @return the failed indices
   */
  public BitSet localLoadFailures(int n) {
    return protocol.localLoadFailures(n);
  }

  /**
   * Commits the first {@code n} write acks with this rank's own failure status.
   *
   * @param n acks, at most {@link #readyWritePrefix()}
   */
  public void commitWrites(int n) {
    protocol.commitWrites(n, protocol.localWriteFailures(n));
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
    protocol.commitWrites(n, Objects.requireNonNull(failed, "failed"));
  }

  /**
   * Commits the first {@code n} load acks with this rank's own failure status.
   *
   * @param n acks, at most {@link #readyLoadPrefix()}
   */
  public void commitLoads(int n) {
    protocol.commitLoads(n, protocol.localLoadFailures(n));
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
    protocol.commitLoads(n, Objects.requireNonNull(failed, "failed"));
  }

  /**
   * Replicated: pending backups, loads, L3 writes and prefetches. The per-tick sync may be
   * skipped iff 0.
   *
   * @return the count
   */
  public int outstandingOperations() {
    return protocol.outstanding();
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
   * The single-rank sync: commits every write, load, L3 write and prefetch step that has
   * finished here.
   *
   * @return items committed
   */
  public int sync() {
    return protocol.sync();
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
    return l3.present();
  }

  /**
   * The L3 settings.
   *
   * @return the settings, or empty without an L3 tier
   */
  public Optional<io.kvtier.core.config.L3Config> l3Config() {
    return l3.config();
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
    if (!l3.present()) {
      // Without a tier nothing may be touched: the match below would stamp and split.
      return false;
    }
    if (requests.isActive(requestId)) {
      throw new IllegalStateException("startPrefetch of request id=" + requestId
          + ": the request is active; prefetch before admitting it");
    }
    matcher.checkTokens(tokens, 0, tokens.length);
    RadixNode root = matcher.rootFor(options.namespace(), tokens);
    PrefixMatcher.Scan scan = matcher.scan(root, tokens, false);
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
    return l3.state(requestId);
  }

  /**
   * Replicated: what the prefetch of the most recently admitted request that had one inserted;
   * read it right after {@link #admit} to count L3 hit tokens.
   *
   * @param requestId the request just admitted
   * @return the outcome, or empty if that request had no prefetch
   */
  public Optional<PrefetchOutcome> admittedPrefetch(long requestId) {
    return l3.admittedPrefetch(requestId);
  }

  /**
   * Replicated: ends a request's prefetch because the request is aborted (or will not be
   * admitted). Host slots a fetch may still be writing are freed once every rank's fetch has
   * stopped; nodes already inserted stay in the tree.
   *
   * @param requestId the request; nothing happens if it has no prefetch
   */
  public void cancelPrefetch(long requestId) {
    l3.cancel(requestId);
  }

  /**
   * Replicated: L3 writes not yet committed.
   *
   * @return the count
   */
  public int pendingL3Writes() {
    return l3.pendingWrites();
  }

  /**
   * Replicated: prefetches probing, fetching or draining; each takes {@link
   * #PREFETCH_SYNC_WIDTH} elements of the fused reduction.
   *
   * @return the count
   */
  public int pendingPrefetches() {
    return l3.pendingPrefetches();
  }

  /**
   * Rank-local: how many L3 writes from the head of the FIFO have finished on this rank.
   *
   * @return the ready prefix
   */
  public int readyL3WritePrefix() {
    return l3.readyWritePrefix();
  }

  /**
   * Rank-local: which of the first {@code n} L3 writes failed on this rank.
   *
   * @param n writes, at most {@link #readyL3WritePrefix()}
   * @return the failed indices
   */
  public BitSet localL3WriteFailures(int n) {
    return l3.localWriteFailures(n);
  }

  /**
   * Replicated: commits exactly {@code n} L3 writes: their nodes' host copies lose the
   * protection, and the nodes are marked as stored unless the write is in {@code failed}.
   *
   * @param n writes; every rank must have finished them
   * @param failed indices (0-based from the head) that failed on some rank
   * @throws IllegalArgumentException if {@code n > 0} without an L3 tier
   */
  public void commitL3Writes(int n, BitSet failed) {
    l3.commitWrites(n, Objects.requireNonNull(failed, "failed"));
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
    l3.localPrefetchProgress(Objects.requireNonNull(into, "into"), offset);
  }

  /**
   * Replicated: applies the agreed (MIN-reduced) values of the first {@code count} pending
   * prefetches: a finished probe reserves host slots and starts the fetch, a fetch is decided by
   * the policy and its agreed pages inserted, a drained reservation is freed.
   *
   * @param agreed the reduced values
   * @param offset where the first prefetch's values are
   * @param count prefetches covered, the {@link #pendingPrefetches()} the values were taken for
   * @throws IllegalArgumentException if {@code count > 0} without an L3 tier
   */
  public void commitPrefetches(long[] agreed, int offset, int count) {
    l3.commitPrefetches(Objects.requireNonNull(agreed, "agreed"), offset, count);
  }

  /**
   * The replicated counters of the L3 tier.
   *
   * @return a snapshot; {@link L3Stats#NONE} without an L3 tier
   */
  public L3Stats l3Stats() {
    return l3.stats();
  }

  // ---------------------------------------------------------------- inspection

  /**
   * The device pool's accounting.
   *
   * @return capacity, free, evictable and protected pages
   */
  public PoolUsage deviceUsage() {
    return ledger.deviceUsage();
  }

  /**
   * The host pool's accounting.
   *
   * @return capacity, free, evictable and protected pages
   */
  public PoolUsage hostUsage() {
    return ledger.hostUsage();
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
    matcher.checkTokens(tokens, 0, tokens.length);
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
    return prepared.prepare(requests.get("prepareBackup", requestId));
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
    prepared.stream(requests.get("streamLayer", requestId), layer);
  }

  // ---------------------------------------------------------------- digest and stats

  /**
   * A 64-bit hash of all replicated state of this cache, for the rank protocol's divergence
   * check (ARCHITECTURE §5): equal on ranks that took the same decisions, and different (up to
   * hash collisions) as soon as any replicated field differs. What it covers is listed in {@code
   * ReplicaDigest}; copy completion is never read. Costs time linear in the nodes, their key
   * tokens and the requests.
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
    return protocol.isLoadLayerReady(load, layer);
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
    protocol.awaitLoadLayer(load, layer);
  }

  // ---------------------------------------------------------------- the rooms, for the checks

  CacheTree tree() {
    return tree;
  }

  PoolLedger ledger() {
    return ledger;
  }

  Transfers transfers() {
    return transfers;
  }

  Evictor evictor() {
    return evictor;
  }

  LongMap<RequestState> requests() {
    return requests.states();
  }

  LongMap<CacheLock> locks() {
    return locks.all();
  }

  Optional<KvMemory> memory() {
    return memory;
  }

  RuleVariants rules() {
    return rules;
  }

  LocalProgress localProgress() {
    return protocol.progress();
  }

  PreparedBackups preparedBackups() {
    return prepared;
  }

  /** The L3 tier's rooms; empty without an L3 tier. */
  Optional<L3Room> l3() {
    return l3.room();
  }
}
