package io.kvtier.core.cache;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The active requests of one rank (CACHE.md §3, §5, §10): admission (match, lock,
 * load-back), the device pages a request allocates, and its end. Every request ends through one
 * release ({@link #release}): a finish after its insert, an abort without one; a chunk insert
 * moves the request's lock down and keeps it active.
 *
 * <p>Design note (hot path): the admission, the allocation and the finish are the replay's whole
 * request. Request states are reused ({@link RequestState.Pool}), the walk and scan results are
 * holders of the {@link PrefixMatcher}, and the insert's result a holder of this table, so a
 * request allocates its admission, its page table if asked for, and the tree's new nodes only.
 * The finish inserts from the node the request locked at admission, with the first-page key the
 * admission's walk computed and its copy of the tokens past the match, when the finish passes
 * the admitted array; another array may differ past the prefix and gets neither. Only
 * replicated state decides: the tree, the pools, the request's own pages and the locks.
 */
final class RequestTable {
  private final CacheTree tree;
  private final TreeInsert inserts;
  private final PoolLedger ledger;
  private final PrefixMatcher matcher;
  private final Backups backups;
  private final LoadBacks loadBacks;
  private final PreparedBackups prepared;
  private final WriteTriggers triggers;
  private final L3Port l3;
  private final RuleVariants rules;
  private final int pageSize;

  /** The requests' recurrent-state snapshots ({@link NoSnapshots} without them). */
  private final SnapshotPort snapshots;

  private final LongMap<RequestState> requests = new LongMap<>(64);
  private final RequestState.Pool states = new RequestState.Pool();

  /**
   * Finishes and chunk inserts given an array other than the admitted one, each of which checked
   * all its tokens and compared the prefix (the slow path); read by the tests (through {@link
   * io.kvtier.core.cache.testing.CacheTestHooks#tokenRechecks}) to see the engine take the fast
   * path.
   */
  long tokenRechecks;

  /** Where the last insert of a request ended; refilled by each. */
  private final InsertResult inserted = new InsertResult();

  RequestTable(
      CacheTree tree,
      TreeInsert inserts,
      PoolLedger ledger,
      PrefixMatcher matcher,
      Backups backups,
      LoadBacks loadBacks,
      PreparedBackups prepared,
      WriteTriggers triggers,
      L3Port l3,
      RuleVariants rules,
      int pageSize,
      SnapshotPort snapshots) {
    this.tree = tree;
    this.inserts = inserts;
    this.ledger = ledger;
    this.matcher = matcher;
    this.backups = backups;
    this.loadBacks = loadBacks;
    this.prepared = prepared;
    this.triggers = triggers;
    this.l3 = l3;
    this.rules = rules;
    this.pageSize = pageSize;
    this.snapshots = snapshots;
  }

  LongMap<RequestState> states() {
    return requests;
  }

  boolean isActive(long requestId) {
    return requests.get(requestId) != null;
  }

  int size() {
    return requests.size();
  }

  RequestState get(String operation, long requestId) {
    RequestState r = requests.get(requestId);
    if (r == null) {
      throw new UnknownRequestException(operation, requestId);
    }
    return r;
  }

  // ---------------------------------------------------------------- admission

  Admission admit(long requestId, int[] tokens, int length, RequestOptions options) {
    checkLength("admit", requestId, tokens, length);
    if (requests.get(requestId) != null) {
      throw new IllegalStateException(
          "admit of request id="
              + requestId
              + ": already active; finish or abort it before admitting the id again");
    }
    l3.checkAdmittable(requestId);
    RadixNode root = matcher.rootFor(options.namespace(), tokens, length);
    PrefixMatcher.Scan scan = matcher.scan(root, tokens, length, true);
    try {
      matcher.restampWalkedPath();
      RadixNode locked = scan.lastDevice;
      tree.lock(locked);
      int loaded = 0;
      List<LoadBack> pending = scan.loads;
      RadixNode target = snapshots.loadBackTarget(scan);
      if (target != null && target != scan.lastDevice && options.loadBackQuotaPages() > 0) {
        LoadBack load = loadBacks.loadBack(scan.lastDevice, target, options.loadBackQuotaPages());
        if (load != null) {
          tree.lock(target);
          tree.unlock(scan.lastDevice);
          locked = target;
          loaded = target.depth - scan.lastDevice.depth;
          pending = new ArrayList<>(pending);
          pending.add(load);
        }
      }
      locked = snapshots.resumeNode(scan, root, locked, loaded);
      // Released only now that the request's own lock holds what the prefetch found.
      l3.admitted(requestId);
      RequestState state =
          states.take(
              requestId,
              options.namespace(),
              options.priority(),
              tokens,
              length,
              locked,
              locked.depth);
      state.missKey = matcher.missKey();
      state.missKeyPos = matcher.missPos();
      state.keyCopy.takeFrom(scan.copy);
      snapshots.admitted(state, locked);
      requests.put(requestId, state);
      int matched = scan.lastHost.depth;
      state.matchedLength = Math.max(matched, locked.depth);
      return new Admission(
          requestId,
          locked.depth,
          scan.hostLength,
          loaded,
          pending,
          locked,
          scan.lastHost,
          matched,
          snapshots.usableLength(matched, locked));
    } finally {
      // Taken by the request unless something failed on the way.
      tree.releaseKey(scan.copy);
    }
  }

  /**
   * Starts the L3 prefetch of a request that is not active yet (see {@link
   * RankCache#startPrefetch}); false at once without an L3 tier, before anything is touched.
   */
  boolean startPrefetch(
      long requestId, int[] tokens, int length, RequestOptions options, boolean awaitTransfer) {
    checkLength("startPrefetch", requestId, tokens, length);
    if (!l3.present()) {
      return false;
    }
    if (requests.get(requestId) != null) {
      throw new IllegalStateException(
          "startPrefetch of request id="
              + requestId
              + ": the request is active; prefetch before admitting it");
    }
    matcher.checkTokens(tokens, 0, length);
    RadixNode root = matcher.rootFor(options.namespace(), tokens, length);
    PrefixMatcher.Scan scan = matcher.scan(root, tokens, length, false);
    int aligned = length - length % pageSize;
    boolean started =
        l3.start(requestId, options.namespace(), tokens, aligned, scan.lastHost, awaitTransfer);
    tree.maybeDropRoot(root);
    return started;
  }

  // ---------------------------------------------------------------- allocation

  int[] allocate(RequestState r, int pages) {
    if (pages < 0) {
      throw new IllegalArgumentException(
          "allocate of request id=" + r.id + ": pages=" + pages + " must be >= 0");
    }
    if (pages == 0) {
      return new int[0];
    }
    addPages(r, pages);
    return r.own.toArray(r.ownCount() - pages, pages, ledger.devicePool);
  }

  int[] allocateTokens(RequestState r, int totalTokens) {
    int needed = pagesMissing(r, totalTokens);
    return needed <= 0 ? new int[0] : allocate(r, needed);
  }

  int growTo(RequestState r, int totalTokens) {
    int needed = pagesMissing(r, totalTokens);
    if (needed <= 0) {
      return 0;
    }
    addPages(r, needed);
    return needed;
  }

  private int pagesMissing(RequestState r, int totalTokens) {
    int held = r.prefixLength / pageSize + r.ownCount();
    return (int) (((long) totalTokens + pageSize - 1) / pageSize) - held;
  }

  private void addPages(RequestState r, int pages) {
    if (rules.allocationFailure != null && rules.allocationFailure.getAsBoolean()) {
      // The broken variant of ARCHITECTURE.md §4 rule 4: an outcome no other rank agreed to.
      throw ledger.deviceExhausted(pages, ledger.devicePool.free());
    }
    // The snapshots inside the pages take their slots all or nothing with them (HYBRID.md §5).
    int slots = snapshots.slotsFor(r, pages);
    int total = pages + slots;
    int free = ledger.devicePool.free();
    if (free < total) {
      backups.evictDevice(total - free);
      free = ledger.devicePool.free();
      if (free < total) {
        throw ledger.deviceExhausted(total, free);
      }
    }
    ledger.devicePool.allocate(pages, r.own);
    ledger.requestPages += total;
    snapshots.allocate(r, slots);
  }

  /** The snapshots a step of the request over {@code (from, to]} takes (HYBRID.md §5). */
  List<SnapshotTarget> stepSnapshots(RequestState r, int from, int to) {
    return snapshots.stepSnapshots(r, from, to);
  }

  int[] pageTable(RequestState r) {
    int[] prefix = tree.pathDeviceSlots(r.lockNode);
    int[] table = Arrays.copyOf(prefix, prefix.length + r.ownCount());
    r.own.copyTo(0, r.ownCount(), table, prefix.length, ledger.devicePool);
    return table;
  }

  int copyPageTable(RequestState r, int[] dst, int offset) {
    int prefixPages = r.prefixLength / pageSize;
    int total = prefixPages + r.ownCount();
    if (offset < 0 || offset + total > dst.length) {
      throw new IndexOutOfBoundsException(
          "copyPageTable of request id="
              + r.id
              + ": "
              + total
              + " slots at offset="
              + offset
              + " do not fit dst.length="
              + dst.length);
    }
    for (RadixNode n = r.lockNode; n.parent != null; n = n.parent) {
      n.copyDeviceSlots(dst, offset + (n.depth - n.keyLength) / pageSize, ledger.devicePool);
    }
    r.own.copyTo(0, r.ownCount(), dst, offset + prefixPages, ledger.devicePool);
    return total;
  }

  // ---------------------------------------------------------------- finish, chunk, abort

  int finish(RequestState r, int[] tokens, int length) {
    checkTokens("finish", r, tokens, length);
    requests.remove(r.id);
    int aligned = length - length % pageSize;
    int cached = r.prefixLength;
    int consumed = 0;
    RadixNode deepest = r.lockNode;
    if (CacheTree.pathValid(r.lockNode)) {
      cached = insertOwn(r, tokens, aligned);
      consumed = (inserted.end - r.prefixLength) / pageSize;
      deepest = inserted.node;
    }
    release(r, consumed);
    matcher.restamp(deepest);
    return cached;
  }

  void cacheChunk(RequestState r, int[] tokens, int computedTokens) {
    checkTokens("cacheChunk", r, tokens, computedTokens);
    if (tokens != r.tokens) {
      // The admission's first-page key and key copy are of the old array.
      r.missKeyPos = -1;
      tree.releaseKey(r.keyCopy);
      r.tokens = tokens;
      r.length = tokens.length;
      r.checkedLength = computedTokens;
    }
    int aligned = computedTokens - computedTokens % pageSize;
    if (aligned > r.prefixLength && CacheTree.pathValid(r.lockNode)) {
      insertOwn(r, tokens, aligned);
      int end = inserted.end;
      RadixNode last = inserted.node;
      int consumed = (end - r.prefixLength) / pageSize;
      if (end > r.prefixLength) {
        tree.lock(last);
        tree.unlock(r.lockNode);
        r.lockNode = last;
        r.prefixLength = end;
        // The first step resumed already; the snapshot is the moved-from node's.
        r.resumeSlots = RequestState.NO_SLOTS;
      }
      // The tree took the consumed pages' runs; the rest moves to the front.
      r.own.dropFront(consumed);
      snapshots.chunkInserted(r, end);
      matcher.restamp(last);
    }
  }

  void abort(RequestState r) {
    requests.remove(r.id);
    release(r, 0);
  }

  /**
   * The end of a request, finished or aborted: its prepared backup (if still there) is rolled
   * back, its own pages past the {@code consumed} ones the tree took are freed, its lock and its
   * key copy released, and its state given back.
   */
  private void release(RequestState r, int consumed) {
    if (r.prepared != null) {
      prepared.rollBack(r);
    }
    int rest = r.ownCount() - consumed;
    r.own.release(ledger.devicePool, consumed, rest);
    ledger.requestPages -= rest;
    snapshots.release(r);
    tree.unlock(r.lockNode);
    tree.releaseKey(r.keyCopy);
    states.give(r);
  }

  /**
   * Counts the hits on the request's locked path and inserts its computed pages; a prepared
   * backup is resolved on the way (attached or rolled back). {@link #inserted} says where the
   * insert ended.
   */
  private int insertOwn(RequestState r, int[] tokens, int aligned) {
    inserts.hitPath(r.lockNode, r.priority, triggers);
    // The admission's key and copy are of the admitted array; another array may differ past
    // the prefix.
    boolean admitted = tokens == r.tokens;
    int keyPos = admitted ? r.missKeyPos : -1;
    KeyCopy copy = admitted ? r.keyCopy : CacheTree.NO_COPY;
    return snapshots.insert(r, tokens, aligned, keyPos, copy, inserted);
  }

  /**
   * Checks the tokens a finish or chunk insert uses, {@code tokens[0, used)}, against the
   * request's pages and prefix. The admitted array itself (the fast path: the engine's and the
   * replay's) was checked at admission and is the caller's promise not to change, so only its
   * tokens past those checked before are checked now (an engine's generated tokens, say); another
   * array is checked whole and compared with the admitted prefix ({@link #tokenRechecks}).
   */
  private void checkTokens(String operation, RequestState r, int[] tokens, int used) {
    checkLength(operation, r.id, Objects.requireNonNull(tokens, "tokens"), used);
    long held = r.prefixLength + (long) r.ownCount() * pageSize;
    if (used < r.prefixLength) {
      throw new IllegalArgumentException(
          operation
              + " of request id="
              + r.id
              + ": "
              + used
              + " tokens is shorter than the request's cached prefix of "
              + r.prefixLength
              + " tokens; pass the request's whole token sequence");
    }
    if (used > held) {
      throw new IllegalArgumentException(
          operation
              + " of request id="
              + r.id
              + ": "
              + used
              + " tokens need KV pages but the request holds pages for only "
              + held
              + " tokens; allocate the missing pages first");
    }
    if (tokens == r.tokens) {
      if (used > r.checkedLength) {
        matcher.checkTokens(tokens, r.checkedLength, used);
        r.checkedLength = used;
      }
    } else {
      tokenRechecks++;
      matcher.checkTokens(tokens, 0, used);
      int m = Arrays.mismatch(tokens, 0, r.prefixLength, r.tokens, 0, r.prefixLength);
      if (m >= 0) {
        throw new IllegalArgumentException(
            operation
                + " of request id="
                + r.id
                + ": tokens differ from the admitted prompt at index "
                + m
                + " ("
                + tokens[m]
                + " != "
                + r.tokens[m]
                + ") within the cached prefix of "
                + r.prefixLength
                + " tokens; pass the admitted tokens followed by the new ones");
      }
    }
  }

  private static void checkLength(String operation, long requestId, int[] tokens, int length) {
    if (length < 0 || length > tokens.length) {
      throw new IllegalArgumentException(
          operation
              + " of request id="
              + requestId
              + ": length="
              + length
              + " is outside the array of "
              + tokens.length
              + " tokens; pass 0 <= length <= tokens.length");
    }
  }
}
