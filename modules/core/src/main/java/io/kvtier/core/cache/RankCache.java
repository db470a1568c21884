package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.L3Config;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.TransferEngine;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The hierarchical radix KV cache of one rank: the paged radix tree, the device (L1) and host
 * (L2) pools, eviction, backups, prepared backups and load-backs (CACHE.md §1–§11), and
 * optionally an L3 store (§12). The package description tells a request's way through it and
 * the per-tick commit; every decision that changes the tree or a pool reads replicated state
 * only (ARCHITECTURE.md §4), and copy completion enters only through the commit calls with agreed
 * arguments. Methods marked rank-local answer from this rank's copy progress and decide nothing;
 * those marked replicated must be called at the same point on every rank. The cache never reads
 * the wall clock.
 *
 * <p>Driven by a {@link io.kvtier.core.rank.RankEngine}, the cache is bound to it ({@link
 * #bindSchedule}): on several ranks its replicated mutators then throw {@link
 * IllegalStateException} outside the engine's steps, the single-rank forms {@link CommitPort#commitWrites(int)}, {@link CommitPort#commitLoads(int)} and
 * {@link #sync()} throw on several ranks, and a server reads through {@link #readOnly()}
 * ({@code RankEngine.view()}). Unbound, it is a single-rank cache, or one whose caller repeats the
 * package description's sync across ranks.
 *
 * <p>Not thread-safe: one scheduler thread calls it. The token arrays passed to {@link #admit}
 * and {@link #cacheChunk} are kept by reference until the request ends and must not be modified
 * meanwhile.
 *
 * <p>Design note (hot path): a facade over the rooms that the package description maps. Each
 * method checks its arguments and makes one call into one room through a final field, so the
 * request path gains no object in between. The rooms are final classes; the interfaces a
 * request meets have one implementation (the hit listener) or two (the L3 port), call sites the
 * JIT inlines. The rooms are built once, bottom-up, in the constructor.
 */
public final class RankCache implements CacheView {
  /** Where a request's L3 prefetch stands. */
  public enum PrefetchState {
    /** The request has no prefetch (never started, admitted, or cancelled). */
    NONE,
    /** Probing or fetching: do not admit the request yet. */
    RUNNING,
    /** Decided: the pages are in the tree; admit the request. */
    DONE
  }

  private final CacheConfig config;
  private final CacheCounters counters = new CacheCounters();
  private final PoolLedger ledger;
  private final CacheTree tree;
  private final L3Port l3;
  private final Backups backups;
  private final LoadBacks loadBacks;
  private final PreparedBackups prepared;
  private final PrefixMatcher matcher;
  private final SnapshotRule snapshotRule;
  private final RequestTable requests;
  private final NodeLocks locks;
  private final Publications publications;
  private final CommitProtocol protocol;
  private final CommitPort commits;
  private final Rooms rooms;
  private final CacheView readOnly = new ReadOnlyCache(this);

  /** The sums of the host pool's blocks; null without a host pool, or one without bytes. */
  private final HostChecksums hostSums;

  /** Who may change the replicated state: anyone until an engine binds it. */
  private CacheSchedule schedule = CacheSchedule.UNBOUND;

  /** Builds the rooms bottom-up, each with its collaborators: nothing is wired afterwards. */
  RankCache(
      CacheConfig config, Optional<KvMemory> memory, L3Setup l3Setup, CacheEventListener listener) {
    this.config = config;
    RuleVariants rules = new RuleVariants();
    this.ledger = new PoolLedger(config.devicePages(), config.hostPages());
    this.tree =
        new CacheTree(
            config.pageSize(),
            config.evictionPolicy(),
            ledger,
            CacheEvents.of(listener, config.pageSize(), this::schedule),
            rules);
    this.hostSums =
        memory
            .flatMap(KvMemory::host)
            .filter(HostMemory::holdsBytes)
            .map(HostChecksums::new)
            .orElse(null);
    LocalProgress progress =
        new LocalProgress(memory.flatMap(KvMemory::engine).orElse(null), hostSums);
    int layers = memory.map(KvMemory::layers).orElse(0);
    boolean hostTier = config.hostPages() > 0 && memory.flatMap(KvMemory::engine).isPresent();
    Evictor evictor = new Evictor(tree, counters);
    this.l3 =
        l3Setup == null
            ? L3Port.NONE
            : L3Room.of(
                l3Setup,
                memory.orElseThrow().host().orElseThrow(),
                hostSums,
                tree,
                ledger,
                evictor,
                config.snapshotSlots());
    this.backups =
        new Backups(tree, ledger, evictor, l3, config, progress, hostTier, counters, rules);
    this.loadBacks =
        new LoadBacks(tree, ledger, backups, config, progress, layers, hostTier, counters, rules);
    WriteTriggers triggers = new WriteTriggers(backups, l3, config, hostTier);
    TreeInsert inserts = new TreeInsert(tree, ledger);
    this.prepared =
        new PreparedBackups(
            tree, inserts, ledger, backups, evictor, triggers, config, layers, hostTier, rules);
    this.matcher =
        new PrefixMatcher(
            tree, config.pageSize(), config.vocabSize(), rules, config.snapshotSlots() > 0);
    this.snapshotRule = new SnapshotRule(config.pageSize(), config.snapshotIntervalPages());
    this.requests =
        new RequestTable(
            tree,
            inserts,
            ledger,
            matcher,
            backups,
            loadBacks,
            prepared,
            triggers,
            l3,
            rules,
            config.pageSize(),
            SnapshotPort.of(
                config, tree, inserts, ledger, backups, prepared, triggers, rules, snapshotRule));
    this.locks = new NodeLocks(tree);
    this.publications = new Publications(this, tree, backups, l3, locks);
    this.protocol = new CommitProtocol(progress, backups, loadBacks, l3, rules);
    this.commits = new CommitHandshake(this, protocol, backups, loadBacks, l3);
    this.rooms =
        new Rooms(
            tree, ledger, backups, loadBacks, evictor, requests, locks, memory, rules, protocol,
            prepared, l3);
  }

  /**
   * A cache that only manages the tree and the page slots, with no memory behind them (the
   * allocator-only mode of benchmarks and schedulers that keep KV elsewhere); hostPages must be 0.
   */
  public static RankCache withoutMemory(CacheConfig config) {
    Objects.requireNonNull(config, "config");
    if (config.hostPages() != 0) {
      throw new IllegalArgumentException(
          "hostPages="
              + config.hostPages()
              + " but a cache without memory cannot copy pages to a host tier: set hostPages=0, or"
              + " use RankCache.withMemory(config, device, host, transfers)");
    }
    return new RankCache(config, Optional.empty(), null, CacheEventListener.NONE);
  }

  /**
   * A cache over a device pool only, of {@code config.devicePages()} pages of {@code
   * config.pageSize()} tokens (no host tier: hostPages must be 0).
   */
  public static RankCache withMemory(CacheConfig config, DeviceMemory device) {
    return new RankCache(
        config, Optional.of(KvMemory.deviceOnly(config, device)), null, CacheEventListener.NONE);
  }

  /**
   * A cache over a device pool, a host pool of {@code config.hostPages() >= 1} pages in the same
   * layout, and the engine created by {@code device.transferEngine(host)}.
   */
  public static RankCache withMemory(
      CacheConfig config, DeviceMemory device, HostMemory host, TransferEngine transfers) {
    return new RankCache(
        config,
        Optional.of(KvMemory.withHost(config, device, host, transfers)),
        null,
        CacheEventListener.NONE);
  }

  /**
   * A cache over device and host pools and their engine, as above, and an L3 store (CACHE.md
   * §12; {@code l3} holds the store, its executor, settings, clock and the rank's place in the
   * group): host-committed nodes are written to the store in the background, and {@link
   * #startPrefetch} fetches a request's pages that only the store has.
   */
  public static RankCache withMemory(
      CacheConfig config,
      DeviceMemory device,
      HostMemory host,
      TransferEngine transfers,
      L3Setup l3) {
    Objects.requireNonNull(l3, "l3");
    return new RankCache(
        config,
        Optional.of(KvMemory.withHost(config, device, host, transfers)),
        l3,
        CacheEventListener.NONE);
  }

  /**
   * A builder for a cache with any of the parts the factories above take, and a {@link
   * CacheEventListener} for its KV events.
   *
   * @param config the settings
   * @return a builder with no memory, no L3 tier and no listener
   */
  public static RankCacheBuilder builder(CacheConfig config) {
    return new RankCacheBuilder(config);
  }

  /** The settings. */
  public CacheConfig config() {
    return config;
  }

  /**
   * Matches the page-aligned prefix of {@code tokens} without locking it (CACHE.md §2); like
   * every match it touches the nodes passed and may split one. Throws {@link
   * InvalidTokenException} if a token id is outside the vocabulary.
   */
  public MatchResult match(long namespace, int[] tokens) {
    schedule.checkMutation("match");
    Objects.requireNonNull(tokens, "tokens");
    return matcher.match(namespace, tokens);
  }

  /** Admits a request in namespace 0 with the default options (load-back of any size). */
  public Admission admit(long requestId, int[] tokens) {
    return admit(requestId, tokens, RequestOptions.DEFAULT);
  }

  /**
   * Admits a request: matches its prompt, locks the device prefix until the request finishes or
   * aborts, and loads the host hit back when it is at least {@code loadBackThreshold} pages and
   * at most the quota (evicting device pages if needed; all or nothing).
   *
   * @param tokens the prompt's token ids; kept by reference until the request ends, and not to
   *     be changed meanwhile: the tokens past the match are checked and copied now, and an insert
   *     of this array caches that copy
   * @return the locked prefix and the load to wait for, if any
   * @throws IllegalStateException if {@code requestId} is already active, or its L3 prefetch is
   *     not {@code DONE}
   * @throws InvalidTokenException if a token id is outside the vocabulary
   */
  public Admission admit(long requestId, int[] tokens, RequestOptions options) {
    return admit(requestId, tokens, Objects.requireNonNull(tokens, "tokens").length, options);
  }

  /**
   * Admits a request whose prompt is {@code tokens[0, length)}, as {@link #admit(long, int[],
   * RequestOptions)} does. The array is handed over: the cache keeps it by reference until the
   * request ends, and the caller must not change its first {@code length} tokens meanwhile; it
   * may write tokens past them (a generation's output, say) and finish with this same array and
   * a longer length, which checks only the tokens past those checked before, where another array
   * is checked whole and compared with the admitted prefix.
   *
   * @param length the prompt's tokens, {@code 0 <= length <= tokens.length}
   */
  public Admission admit(long requestId, int[] tokens, int length, RequestOptions options) {
    schedule.checkMutation("admit");
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(options, "options");
    return requests.admit(requestId, tokens, length, options);
  }

  /**
   * Allocates {@code pages >= 0} device pages for an active request's uncached tokens, evicting
   * when short (all or nothing, else {@link PoolExhaustedException}); returns the new slots in
   * the order the request's tokens use them.
   */
  public int[] allocate(long requestId, int pages) {
    schedule.checkMutation("allocate");
    return requests.allocate(requests.get("allocate", requestId), pages);
  }

  /**
   * Allocates the pages a request needs to hold the KV of its first {@code totalTokens} tokens
   * (prefix included) like {@link #allocate}; returns the new slots, empty if it had enough.
   */
  public int[] allocateTokens(long requestId, int totalTokens) {
    schedule.checkMutation("allocateTokens");
    return requests.allocateTokens(requests.get("allocateTokens", requestId), totalTokens);
  }

  /**
   * Allocates like {@link #allocateTokens} without returning the new slots, for a scheduler that
   * reads the page table with {@link #copyPageTable} into a row of its own (at page size 1 a
   * fresh copy is one int per uncached token); returns the pages allocated now.
   */
  public int growTo(long requestId, int totalTokens) {
    schedule.checkMutation("growTo");
    return requests.growTo(requests.get("growTo", requestId), totalTokens);
  }

  /**
   * The device slots of the recurrent-state snapshot an active request resumes from (HYBRID.md
   * §5): the snapshot at its locked prefix's end, which its first step loads; empty without
   * snapshots or when it resumes at 0.
   */
  public int[] resumeSlots(long requestId) {
    return requests.get("resumeSlots", requestId).resumeSlots.clone();
  }

  /**
   * The recurrent-state snapshots an active request's step over {@code (from, to]} takes, in
   * position order (HYBRID.md §5, {@link SnapshotRule}): its interval snapshots in the range and
   * its tail at the step's last other page boundary. Empty without snapshots.
   */
  public List<SnapshotTarget> stepSnapshots(long requestId, int from, int to) {
    return requests.stepSnapshots(requests.get("stepSnapshots", requestId), from, to);
  }

  /**
   * The snapshot rule of this cache.
   *
   * @return the rule from the page size and {@code kvtier.snapshot-interval-pages}
   */
  public SnapshotRule snapshotRule() {
    return snapshotRule;
  }

  /** A new array with the request's page table: its locked prefix's slots, then its own. */
  public int[] pageTable(long requestId) {
    return requests.pageTable(requests.get("pageTable", requestId));
  }

  /**
   * Copies the request's page table into {@code dst} from {@code offset}, without allocating;
   * returns the slots written, or throws {@link IndexOutOfBoundsException} if they do not fit.
   */
  public int copyPageTable(long requestId, int[] dst, int offset) {
    RequestState r = requests.get("copyPageTable", requestId);
    Objects.requireNonNull(dst, "dst");
    return requests.copyPageTable(r, dst, offset);
  }

  /** {@link #finish(long, int[])} over the admitted tokens. */
  public int finish(long requestId) {
    schedule.checkMutation("finish");
    RequestState r = requests.get("finish", requestId);
    return requests.finish(r, r.tokens, r.length);
  }

  /**
   * Finishes an active request: inserts the page-aligned part of {@code tokens} (every token
   * whose KV its pages hold, starting with the admitted prompt's cached prefix) with the
   * request's pages (CACHE.md §3), frees the pages that duplicate what the tree had and those
   * past the last full page, releases the request's lock and returns the length that was cached
   * on the device before. A prepared backup is attached to the node holding exactly its pages if
   * the replicated predicate holds, else rolled back. Tokens that do not fit the request's pages
   * or prefix are an {@link IllegalArgumentException}.
   */
  public int finish(long requestId, int[] tokens) {
    return finish(requestId, tokens, Objects.requireNonNull(tokens, "tokens").length);
  }

  /**
   * Finishes an active request over {@code tokens[0, length)}, as {@link #finish(long, int[])}
   * does. Given the admitted array (the engine passes its one token array, prompt and output),
   * the prefix is not compared again and only the tokens past those checked before are checked.
   */
  public int finish(long requestId, int[] tokens, int length) {
    schedule.checkMutation("finish");
    Objects.requireNonNull(tokens, "tokens");
    return requests.finish(requests.get("finish", requestId), tokens, length);
  }

  /** {@link #cacheChunk(long, int[], int)} over the admitted tokens. */
  public int[] cacheChunk(long requestId, int computedTokens) {
    RequestState r = requests.get("cacheChunk", requestId);
    return cacheChunk(requestId, r.tokens, computedTokens);
  }

  /**
   * Caches a chunked prefill's progress: inserts the page-aligned prefix of the first {@code
   * computedTokens} of {@code tokens} (which may have grown, start with the admitted prompt's
   * cached prefix, and are kept by reference from now on), keeps the request active with its lock
   * moved to the end of the inserted prefix, and returns its page table afterwards. The insert
   * resolves a prepared backup as {@link #finish} does; one that covers only part of its pages
   * rolls it back.
   */
  public int[] cacheChunk(long requestId, int[] tokens, int computedTokens) {
    schedule.checkMutation("cacheChunk");
    requests.cacheChunk(requests.get("cacheChunk", requestId), tokens, computedTokens);
    return pageTable(requestId);
  }

  /**
   * Aborts an active request: frees its own pages and releases its lock; nothing is inserted. Its
   * prepared backup is rolled back (host slots written by streamed copies are retired through
   * the write FIFO and freed at that ack's commit).
   */
  public void abort(long requestId) {
    schedule.checkMutation("abort");
    requests.abort(requests.get("abort", requestId));
  }

  /** Whether a request is active (admitted, not finished or aborted). */
  public boolean isActive(long requestId) {
    return requests.isActive(requestId);
  }

  /** The number of active requests. */
  public int activeRequests() {
    return requests.size();
  }

  /**
   * Locks a node of this cache and its ancestors against eviction (the anchor of an L3 prefetch,
   * say); pass the lock to {@link #unlock(CacheLock)} once.
   */
  public CacheLock lock(RadixNode node) {
    schedule.checkMutation("lock");
    tree.checkNode("lock", node);
    return locks.lock(this, node);
  }

  /**
   * Replicated: starts publishing a finished request's prompt (the prefill side of a transfer
   * between replicas, docs/CACHE.md §12): the path of the first {@code pages} full pages of
   * {@code tokens} in {@code namespace} is locked, its nodes without a host copy are backed up,
   * and the host-committed path is written to L3 whatever the write thresholds. Call it right
   * after {@link #finish} of the request, then {@link #publishProgress} once a step until it
   * ends. Without an L3 tier, or with no such path, the publication ends at the first {@link
   * #publishProgress} with 0 pages.
   *
   * @param requestId the finished request's id, naming the publication
   * @param namespace the request's namespace
   * @param tokens its tokens, the prompt first
   * @param pages the prompt's full pages, at most {@code tokens.length / pageSize}
   * @throws IllegalStateException if the request is being published already
   */
  public void publish(long requestId, long namespace, int[] tokens, int pages) {
    schedule.checkMutation("publish");
    Objects.requireNonNull(tokens, "tokens");
    if (pages < 0 || (long) pages * config.pageSize() > tokens.length) {
      throw new IllegalArgumentException(
          "publish of request id="
              + requestId
              + ": pages="
              + pages
              + " must be 0.."
              + tokens.length / config.pageSize()
              + " (full pages of the tokens)");
    }
    publications.start(requestId, namespace, tokens, pages);
  }

  /**
   * Replicated: advances a publication ({@link #publish}) as far as the agreed commits allow.
   *
   * @return -1 while its backup or L3 write is pending; else the prompt pages the L3 store holds
   *     from the first (all of them, fewer when a write failed on some rank or host pages were
   *     short, 0 without an L3 tier), and the publication has ended: its lock is released
   * @throws IllegalStateException if the request is not being published
   */
  public int publishProgress(long requestId) {
    schedule.checkMutation("publishProgress");
    return publications.progress(requestId);
  }

  /** Releases a lock taken with {@link #lock(RadixNode)}; a second release throws. */
  public void unlock(CacheLock lock) {
    schedule.checkMutation("unlock");
    locks.unlock(this, Objects.requireNonNull(lock, "lock"));
  }

  /**
   * Registers a backup (device to host copy) of a resident node whose parent is backed up; false
   * without a host tier, if the node is backed up, not on the device, its parent has no backup,
   * or host pages are short. A node whose backup is {@code PENDING} is a bug: {@link
   * IllegalStateException}.
   */
  public boolean backup(RadixNode node) {
    schedule.checkMutation("backup");
    tree.checkNode("backup", node);
    return backups.backup(node);
  }

  /** Evicts device pages in policy order; returns those freed now (write-back: at commit). */
  public int evictDevice(int pages) {
    schedule.checkMutation("evictDevice");
    return backups.evictDevice(pages);
  }

  /** Evicts host-only leaves in policy order; returns the pages freed. */
  public int evictHost(int pages) {
    schedule.checkMutation("evictHost");
    return backups.evictHost(pages);
  }

  /** Replicated: pending backups, loads, L3 writes and prefetches; the sync may skip iff 0. */
  public int outstandingOperations() {
    return protocol.outstanding();
  }

  /** Replicated: write acks not yet committed. */
  public int pendingWrites() {
    return backups.writes.size();
  }

  /** Replicated: load acks not yet committed. */
  public int pendingLoads() {
    return loadBacks.loads.size();
  }

  /** The commit handshake (CACHE.md §9) that the rank protocol's sync step drives. */
  public CommitPort commits() {
    return commits;
  }

  /** Who may change the replicated state now (the engine's schedule once bound). */
  CacheSchedule schedule() {
    return schedule;
  }

  /** The single-rank sync: commits everything finished here; returns the items committed. */
  public int sync() {
    schedule.checkSingleRank(
        "sync()", "the fused reduction of the package description (CommitSync)");
    return protocol.sync();
  }

  /** Whether this cache has an L3 tier (was built with an {@link L3Setup}). */
  public boolean hasL3() {
    return l3.present();
  }

  /** The L3 settings, or empty without an L3 tier. */
  public Optional<L3Config> l3Config() {
    return l3.config();
  }

  /**
   * Replicated: starts an L3 prefetch for a request before its admission (CACHE.md §12, see
   * the package description); like a match it touches the nodes passed. Admit the request once
   * {@link #prefetchState} says {@code DONE}.
   *
   * @param tokens the tokens the request will be admitted with; kept by reference until it is
   *     admitted or cancelled
   * @param options the namespace is read
   * @return true if a prefetch started; false without an L3 tier or when the request does not
   *     qualify
   * @throws IllegalStateException if the request is active or already has a prefetch
   */
  public boolean startPrefetch(long requestId, int[] tokens, RequestOptions options) {
    return startPrefetch(
        requestId, tokens, Objects.requireNonNull(tokens, "tokens").length, options);
  }

  /**
   * {@link #startPrefetch(long, int[], RequestOptions)} of the prompt {@code tokens[0, length)};
   * the prefetch keeps the array by reference, which must not change meanwhile.
   */
  public boolean startPrefetch(long requestId, int[] tokens, int length, RequestOptions options) {
    return startPrefetch(requestId, tokens, length, options, false);
  }

  /**
   * {@link #startPrefetch(long, int[], int, RequestOptions)}; with {@code awaitTransfer} (the
   * decode side of a transfer between replicas) the prefetch starts whatever the prefetch
   * threshold (any candidate page), and once fetching waits until every rank has fetched its
   * pages or given up, bounded by the L3 timeout ({@code kvtier.l3-timeout-*}), whatever {@code
   * kvtier.l3-prefetch-policy}. Replicated, like the request it is asked for.
   */
  public boolean startPrefetch(
      long requestId, int[] tokens, int length, RequestOptions options, boolean awaitTransfer) {
    schedule.checkMutation("startPrefetch");
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(options, "options");
    return requests.startPrefetch(requestId, tokens, length, options, awaitTransfer);
  }

  /** Replicated: where a request's prefetch stands. */
  public PrefetchState prefetchState(long requestId) {
    return l3.state(requestId);
  }

  /**
   * Replicated: what the prefetch of the most recently admitted request that had one inserted
   * (read it right after {@link #admit} to count L3 hit tokens); empty if it had none.
   */
  public Optional<PrefetchOutcome> admittedPrefetch(long requestId) {
    return l3.admittedPrefetch(requestId);
  }

  /**
   * Replicated: ends a request's prefetch because the request is aborted (or will not be
   * admitted); nothing happens without one. Host slots a fetch may still be writing are freed
   * once every rank's fetch has stopped; nodes already inserted stay in the tree.
   */
  public void cancelPrefetch(long requestId) {
    schedule.checkMutation("cancelPrefetch");
    l3.cancel(requestId);
  }

  /** Replicated: L3 writes not yet committed. */
  public int pendingL3Writes() {
    return l3.pendingWrites();
  }

  /** Replicated: prefetches probing, fetching or draining, {@link CommitPort#PREFETCH_SYNC_WIDTH} each. */
  public int pendingPrefetches() {
    return l3.pendingPrefetches();
  }

  /** The replicated counters of the L3 tier; {@link L3Stats#NONE} without one. */
  public L3Stats l3Stats() {
    return l3.stats();
  }

  /** The device pool's accounting: capacity, free, evictable and protected pages. */
  public PoolUsage deviceUsage() {
    return ledger.deviceUsage();
  }

  /** The host pool's accounting: capacity, free, evictable and protected pages. */
  public PoolUsage hostUsage() {
    return ledger.hostUsage();
  }

  /** The logical clock: bumped at every touch and node creation, never the wall clock. */
  public long logicalClock() {
    return tree.clock;
  }

  /** The number of tree nodes, roots excluded. */
  public int nodeCount() {
    return tree.nodeCount;
  }

  /** The chained SHA-256 keys of a node's pages, one per page (computed now if not known). */
  public List<PageKey> pageKeys(RadixNode node) {
    tree.checkNode("pageKeys", node);
    return PageHasher.nodeKeys(node, config.pageSize());
  }

  /**
   * The page keys of a page-aligned token sequence in a namespace, one per page ({@link
   * MisalignedKeyException} if the length is not a whole number of pages).
   */
  public List<PageKey> pageKeys(long namespace, int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    matcher.checkTokens(tokens, 0, tokens.length);
    return PageHasher.pageKeys(namespace, tokens, config.pageSize());
  }

  /**
   * Reserves (or, before any layer was streamed, extends) a prepared backup (CACHE.md §11,
   * see the package description) over the request's own full pages: host slots now, all or
   * nothing. Call it after {@link #allocate} and before the forward pass, at the same point on
   * every rank; {@link #finish} or {@link #cacheChunk} attaches or rolls it back.
   *
   * @return true if every own full page is covered by the backup now; false without a host tier
   *     or transfer engine, under write_back, without a full own page, or when host pages are
   *     short (an existing backup then stays as it was)
   * @throws UnknownRequestException if the request is not active
   * @throws IllegalStateException if the backup has streamed layers and would have to grow
   */
  public boolean prepareBackup(long requestId) {
    schedule.checkMutation("prepareBackup");
    return prepared.prepare(requests.get("prepareBackup", requestId));
  }

  /**
   * Streams one finished layer ({@code 0 <= layer < layers}, each once) of the request's prepared
   * backup: one device-to-host batch into the reserved host slots. A replicated call (every rank
   * calls it at the same point of its forward pass); only the copy's completion is rank-local,
   * and it reaches the tree only through the MIN commit of the ack the backup joins at attach.
   * The model must not write the layer's pages again afterwards.
   */
  public void streamLayer(long requestId, int layer) {
    schedule.checkMutation("streamLayer");
    prepared.stream(requests.get("streamLayer", requestId), layer);
  }

  /**
   * A 64-bit hash of all replicated state of this cache, for the rank protocol's divergence
   * check (ARCHITECTURE.md §5): equal on ranks that took the same decisions, and different (up to
   * hash collisions) as soon as any replicated field differs; copy completion is never read.
   * The first call costs time linear in the nodes and their key tokens; later calls rehash only
   * the nodes changed since (kept in {@code ChangedNodes}), plus the requests and queues in full.
   */
  public long replicaDigest() {
    return ReplicaDigest.of(this);
  }

  /**
   * Rank-local: host blocks (page, layer) whose CRC32C was checked before a load-back or an L3
   * write read them (docs/CACHE.md, "Verified restores"); 0 without a host tier.
   */
  public long checkedHostBlocks() {
    return hostSums == null ? 0 : hostSums.checkedBlocks();
  }

  /**
   * Rank-local: checked host blocks whose bytes did not match the sum taken when they were
   * written; each failed its load-back or L3 write. 0 without a host tier.
   */
  public long hostChecksumMismatches() {
    return hostSums == null ? 0 : hostSums.mismatches();
  }

  /** The replicated counters of this cache (prepared backups, backups, loads, evictions). */
  public CacheStats stats() {
    return counters.snapshot();
  }

  /**
   * Rank-local: whether layer {@code layer} of a load-back of this cache (from {@link
   * Admission#pendingLoads()}) is on this rank's device (done or failed here, or the load
   * committed), without blocking. Decides nothing; the model asks it before reading the layer.
   */
  public boolean isLoadLayerReady(LoadBack load, int layer) {
    return protocol.isLoadLayerReady(load, layer);
  }

  /**
   * Rank-local: blocks until layer {@code layer} of a load-back is on this rank's device. Throws
   * {@link io.kvtier.spi.TransferFailedException} if the copy failed (here, or on some rank once
   * the load was committed as failed). A single rank aborts the request then; several ranks abort
   * it only once the load's agreed commit says {@link LoadBack#failed()} (see {@link
   * Admission#pendingLoads()}), never on this rank's own failure alone.
   */
  public void awaitLoadLayer(LoadBack load, int layer) throws InterruptedException {
    protocol.awaitLoadLayer(load, layer);
  }

  @Override
  public int cachedLength(long namespace, int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    RadixNode root = tree.rootFor(namespace, false);
    if (root == null) {
      return 0;
    }
    return new TreeWalk(tree)
        .walk(root, tokens, 0, tokens.length - tokens.length % config.pageSize());
  }

  /**
   * This cache as a {@link CacheView} that cannot be cast back to it: what an engine hands to
   * the server that embeds it.
   */
  public CacheView readOnly() {
    return readOnly;
  }

  /**
   * Binds this cache to the one owner that may change its replicated state from now on: the
   * {@link io.kvtier.core.rank.RankEngine} that drives it calls this once, enters the returned
   * schedule for each step and leaves it after. With {@code worldSize > 1}, a replicated mutator
   * called outside a step then throws {@link IllegalStateException} naming the method, and the
   * single-rank forms {@link CommitPort#commitWrites(int)}, {@link CommitPort#commitLoads(int)} and {@link #sync()}
   * throw always. Reads stay open.
   *
   * @param worldSize the ranks of the owner's group, at least 1
   * @return the owner's token
   * @throws IllegalStateException if an owner is bound already
   */
  public CacheSchedule bindSchedule(int worldSize) {
    if (worldSize < 1) {
      throw new IllegalArgumentException("worldSize=" + worldSize + " must be >= 1");
    }
    if (schedule.bound()) {
      throw new IllegalStateException(
          "this cache is driven by an engine already: build one RankCache per RankEngine");
    }
    schedule = new CacheSchedule(worldSize, true);
    return schedule;
  }

  /** The rooms, for the digest, the checks and the test hooks. */
  Rooms rooms() {
    return rooms;
  }
}
