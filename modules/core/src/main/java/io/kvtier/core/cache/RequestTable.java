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
  private final PoolLedger ledger;
  private final PrefixMatcher matcher;
  private final Backups backups;
  private final LoadBacks loadBacks;
  private final PreparedBackups prepared;
  private final WriteTriggers triggers;
  private final L3Port l3;
  private final RuleVariants rules;
  private final int pageSize;

  /** Page slots per recurrent-state snapshot; 0 = none, every path below as without them. */
  private final int snapshotSlots;

  private final SnapshotRule snapshotRule;
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
      PoolLedger ledger,
      PrefixMatcher matcher,
      Backups backups,
      LoadBacks loadBacks,
      PreparedBackups prepared,
      WriteTriggers triggers,
      L3Port l3,
      RuleVariants rules,
      int pageSize,
      int snapshotSlots,
      SnapshotRule snapshotRule) {
    this.tree = tree;
    this.ledger = ledger;
    this.matcher = matcher;
    this.backups = backups;
    this.loadBacks = loadBacks;
    this.prepared = prepared;
    this.triggers = triggers;
    this.l3 = l3;
    this.rules = rules;
    this.pageSize = pageSize;
    this.snapshotSlots = snapshotSlots;
    this.snapshotRule = snapshotRule;
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
      // With snapshots the load-back goes as far as the deepest committed host snapshot only:
      // a request resumes at a snapshot (HYBRID.md §5).
      RadixNode target = snapshotSlots == 0 ? scan.lastHost : scan.usableHost;
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
      if (snapshotSlots > 0 && loaded == 0 && scan.usableDevice != locked) {
        RadixNode usable = scan.usableDevice != null ? scan.usableDevice : root;
        tree.lock(usable);
        tree.unlock(locked);
        locked = usable;
      }
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
      if (snapshotSlots > 0) {
        state.nextSnapshot = snapshotRule.nextInterval(locked.depth);
        if (locked.stateSlots != null) {
          state.resumeSlots = locked.stateSlots.clone();
        }
      }
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
          snapshotSlots == 0 ? matched : locked.depth);
    } finally {
      // Taken by the request unless something failed on the way.
      tree.releaseKey(scan.copy);
    }
  }

  /**
   * Starts the L3 prefetch of a request that is not active yet (see {@link
   * RankCache#startPrefetch}); false at once without an L3 tier, before anything is touched.
   */
  boolean startPrefetch(long requestId, int[] tokens, int length, RequestOptions options) {
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
    boolean started = l3.start(requestId, options.namespace(), tokens, aligned, scan.lastHost);
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
    int sets = 0;
    boolean tail = false;
    if (snapshotSlots > 0) {
      // The interval snapshots inside the tokens the pages will hold, and a tail: all or
      // nothing with the pages (HYBRID.md §5).
      long held = r.prefixLength + (long) (r.ownCount() + pages) * pageSize;
      for (long e = r.nextSnapshot; e <= held; e = snapshotRule.nextInterval((int) e)) {
        sets++;
      }
      tail = r.tailSlots == null && !rules.noTailSnapshot;
    }
    int total = pages + snapshotSlots * (sets + (tail ? 1 : 0));
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
    if (sets > 0) {
      int n = r.snapshotCount + sets;
      if (r.snapshotPositions.length < n) {
        r.snapshotPositions = Arrays.copyOf(r.snapshotPositions, Math.max(n, 4));
        r.snapshotSlots = Arrays.copyOf(r.snapshotSlots, Math.max(n, 4));
      }
      for (int i = 0; i < sets; i++) {
        int[] slots = new int[snapshotSlots];
        ledger.devicePool.allocate(snapshotSlots, slots, 0);
        r.snapshotPositions[r.snapshotCount] = r.nextSnapshot;
        r.snapshotSlots[r.snapshotCount++] = slots;
        r.nextSnapshot = snapshotRule.nextInterval(r.nextSnapshot);
      }
    }
    if (tail) {
      r.tailSlots = new int[snapshotSlots];
      ledger.devicePool.allocate(snapshotSlots, r.tailSlots, 0);
    }
  }

  // ---------------------------------------------------------------- snapshots

  /**
   * The snapshots a step over {@code (from, to]} takes (HYBRID.md §5): the interval positions in
   * the range the request holds slots for, then the tail at the step's last other page boundary.
   */
  List<SnapshotTarget> stepSnapshots(RequestState r, int from, int to) {
    if (snapshotSlots == 0 || to <= from) {
      return List.of();
    }
    List<SnapshotTarget> out = null;
    for (int i = 0; i < r.snapshotCount; i++) {
      int e = r.snapshotPositions[i];
      if (e > from && e <= to && r.snapshotSlots[i] != null) {
        if (out == null) {
          out = new ArrayList<>(2);
        }
        out.add(new SnapshotTarget(e, r.snapshotSlots[i].clone()));
      }
    }
    int tail = snapshotRule.tailInStep(from, to);
    if (tail > 0 && r.tailSlots != null) {
      if (out == null) {
        out = new ArrayList<>(1);
      }
      out.add(new SnapshotTarget(tail, r.tailSlots.clone()));
      out.sort((a, b) -> Integer.compare(a.position(), b.position()));
    }
    return out == null ? List.of() : out;
  }

  /** The slots of the request's snapshot at {@code position} (an insert's segment end), or null. */
  private int[] takeSnapshot(RequestState r, int position, boolean last) {
    for (int i = 0; i < r.snapshotCount; i++) {
      if (r.snapshotPositions[i] == position && r.snapshotSlots[i] != null) {
        int[] slots = r.snapshotSlots[i];
        r.snapshotSlots[i] = null;
        return slots;
      }
    }
    if (last && r.tailSlots != null && !snapshotRule.isInterval(position)) {
      int[] slots = r.tailSlots;
      r.tailSlots = null;
      return slots;
    }
    return null;
  }

  /**
   * A node at an insert's segment end takes the request's snapshot there if it has none and
   * its backup state lets it (NONE, or COMMITTED with a host snapshot already: the state is the
   * same bits, exact by construction); else the slots are freed.
   */
  private void adoptSnapshot(RadixNode node, int[] slots) {
    ledger.requestPages -= slots.length;
    boolean state =
        node.backupState == BackupState.NONE
            || (node.backupState == BackupState.COMMITTED && node.hostStateSlots != null);
    boolean local =
        rules.snapshotFromCopyProgress == null || rules.snapshotFromCopyProgress.getAsBoolean();
    if (rules.snapshotFromCopyProgress != null && state && !local) {
      rules.fired++;
    }
    if (node.stateSlots == null
        && node.resident()
        && node.invalid == 0
        && node.parent != null
        && state
        && local) {
      ledger.account(node, -1);
      node.stateSlots = slots;
      ledger.account(node, +1);
      tree.keyChanged(node);
    } else {
      ledger.devicePool.release(slots, 0, slots.length);
    }
  }

  /** Frees the request's snapshot slots at and below {@code upTo} (all with MAX_VALUE). */
  private void releaseSnapshots(RequestState r, int upTo, boolean tail) {
    int kept = 0;
    for (int i = 0; i < r.snapshotCount; i++) {
      int[] slots = r.snapshotSlots[i];
      if (r.snapshotPositions[i] <= upTo || slots == null) {
        if (slots != null) {
          ledger.devicePool.release(slots, 0, slots.length);
          ledger.requestPages -= slots.length;
        }
      } else {
        r.snapshotPositions[kept] = r.snapshotPositions[i];
        r.snapshotSlots[kept++] = slots;
      }
    }
    for (int i = kept; i < r.snapshotCount; i++) {
      r.snapshotSlots[i] = null;
    }
    r.snapshotCount = kept;
    if (tail && r.tailSlots != null) {
      ledger.devicePool.release(r.tailSlots, 0, r.tailSlots.length);
      ledger.requestPages -= r.tailSlots.length;
      r.tailSlots = null;
    }
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
      if (snapshotSlots > 0) {
        releaseSnapshots(r, end, false);
        renewTail(r);
      }
      matcher.restamp(last);
    }
  }

  /**
   * After a chunk insert gave the tail to a node, the request takes a new one for its next
   * chunks, evicting if short, and goes on without one if the pool has none (replicated).
   */
  private void renewTail(RequestState r) {
    if (r.tailSlots != null || rules.noTailSnapshot) {
      return;
    }
    int free = ledger.devicePool.free();
    if (free < snapshotSlots) {
      backups.evictDevice(snapshotSlots - free);
      if (ledger.devicePool.free() < snapshotSlots) {
        return;
      }
    }
    r.tailSlots = new int[snapshotSlots];
    ledger.devicePool.allocate(snapshotSlots, r.tailSlots, 0);
    ledger.requestPages += snapshotSlots;
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
    if (snapshotSlots > 0) {
      releaseSnapshots(r, Integer.MAX_VALUE, true);
    }
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
    tree.hitPath(r.lockNode, r.priority, triggers);
    // The admission's key and copy are of the admitted array; another array may differ past
    // the prefix.
    boolean admitted = tokens == r.tokens;
    int keyPos = admitted ? r.missKeyPos : -1;
    KeyCopy copy = admitted ? r.keyCopy : CacheTree.NO_COPY;
    if (snapshotSlots > 0) {
      // A write-through registration made at a segment's hit would copy a node before it
      // takes its snapshot (or before a prepared backup is resolved): registered once the
      // snapshots are placed.
      triggers.defer();
      try {
        if (r.prepared != null) {
          return insertPreparedWithSnapshots(r, tokens, aligned, keyPos, copy);
        }
        return insertWithSnapshots(
            r, r.lockNode, r.prefixLength, tokens, aligned, aligned, keyPos, copy);
      } finally {
        triggers.registerDeferred();
      }
    }
    if (r.prepared != null) {
      return prepared.insert(r, tokens, aligned, r.missKey, keyPos, copy, inserted);
    }
    return tree.insert(
        r.lockNode,
        tokens,
        r.prefixLength,
        aligned,
        r.own,
        0,
        r.priority,
        r.missKey,
        keyPos,
        copy,
        triggers,
        inserted);
  }

  /**
   * The insert with snapshots of a request with a prepared backup (HYBRID.md §5, CACHE.md §11):
   * in segments up to the backup's end, whose chain of nodes then takes the backup whole or
   * rolls it back ({@link PreparedBackups#resolveChain}), and on in segments to {@code aligned}
   * only if the chain reached the backup's end. An insert that stops before the backup's end
   * gives the backup up first, as without snapshots.
   */
  private int insertPreparedWithSnapshots(
      RequestState r, int[] tokens, int aligned, int keyPos, KeyCopy copy) {
    int backupEnd = r.prepared.endToken(pageSize);
    if (aligned < backupEnd) {
      prepared.rollBack(r);
      return insertWithSnapshots(
          r, r.lockNode, r.prefixLength, tokens, aligned, aligned, keyPos, copy);
    }
    int cached =
        insertWithSnapshots(
            r, r.lockNode, r.prefixLength, tokens, backupEnd, aligned, keyPos, copy);
    RadixNode end = inserted.end == backupEnd ? inserted.node : null;
    prepared.resolveChain(r, end);
    if (end != null && aligned > backupEnd) {
      int more = insertWithSnapshots(r, end, backupEnd, tokens, aligned, aligned, keyPos, copy);
      if (cached == backupEnd) {
        cached = more;
      }
    }
    return cached;
  }

  /**
   * The insert with snapshots (HYBRID.md §5) of {@code tokens[from, stop)} below {@code node}:
   * in segments that end at each snapshot position of the request inside the range and at its
   * end, so that every snapshot lies at a node end, where the node takes it or it is freed. The
   * tail goes to the node ending at {@code tailEnd} (the whole insert's end).
   */
  private int insertWithSnapshots(
      RequestState r,
      RadixNode node,
      int from,
      int[] tokens,
      int stop,
      int tailEnd,
      int keyPos,
      KeyCopy copy) {
    int pos = from;
    int cached = -1;
    while (pos < stop) {
      int end = stop;
      for (int i = 0; i < r.snapshotCount; i++) {
        int e = r.snapshotPositions[i];
        if (e > pos && e < end && r.snapshotSlots[i] != null) {
          end = e;
        }
      }
      int c =
          tree.insert(
              node,
              tokens,
              pos,
              end,
              r.own,
              (pos - r.prefixLength) / pageSize,
              r.priority,
              r.missKey,
              keyPos,
              copy,
              triggers,
              inserted);
      if (cached < 0 || cached == pos) {
        cached = c;
      }
      if (inserted.end < end) {
        break;
      }
      int[] slots = takeSnapshot(r, end, end == tailEnd);
      if (slots != null) {
        adoptSnapshot(inserted.node, slots);
      }
      node = inserted.node;
      pos = end;
    }
    if (cached < 0) {
      inserted.node = node;
      inserted.end = pos;
      cached = pos;
    }
    return cached;
  }

  /**
   * Checks the tokens a finish or chunk insert uses, {@code tokens[0, used)}, against the
   * request's pages and prefix. The admitted array itself (the fast path: the engine's and the
   * replay's) was checked at admission and is the caller's promise not to change, so only its
   * tokens past those checked before are checked now (an engine's generated tokens, say); another
   * array is checked whole and compared with the admitted prefix ({@link #tokenRechecks}).
   */
  private void checkTokens(String operation, RequestState r, int[] tokens, int used) {
    Objects.requireNonNull(tokens, "tokens");
    if (used < 0 || used > tokens.length) {
      throw new IllegalArgumentException(
          operation
              + " of request id="
              + r.id
              + ": length="
              + used
              + " is outside the array of "
              + tokens.length
              + " tokens; pass 0 <= length <= tokens.length");
    }
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
}
