package io.kvtier.core.cache;

import io.kvtier.core.config.L3Config;
import io.kvtier.core.config.L3PrefetchPolicy;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * The replicated controller of the L3 tier (CACHE.md §12): the L3 write FIFO and the pending
 * prefetches, with every decision taken from replicated state and from agreed (reduced) progress
 * only.
 *
 * <p>Writes: a host-committed node whose hit count reached the backup threshold is written with
 * every ancestor not yet in L3 (parents first, so the store holds prefixes). Each covered node's
 * host copy is protected by {@code hostRef} until the write's agreed commit, so host eviction
 * cannot free or reuse the slots the put reads. A write failed on some rank only leaves the
 * nodes unmarked; the next hit may try again.
 *
 * <p>Prefetches follow {@link Prefetch.State}: the probe's hit is agreed with MIN before any slot
 * is reserved (shards differ per rank), the reservation is replicated because pool occupancy is,
 * and the policy decides from the agreed MIN of pages fetched, the agreed MAX of "gave up" and
 * the agreed MIN of "finished". Pages are inserted as host-only nodes below the anchor, which is
 * locked (with the path to the root) for the whole prefetch; slots a rank may still be writing
 * are freed only once every rank reports its fetch finished.
 */
final class L3Tier {
  /** Reduction elements per pending prefetch (see {@link L3Progress#prefetchProgress}). */
  static final int PREFETCH_WIDTH = 3;

  final L3Config config;
  private final CacheTree tree;
  private final PoolLedger ledger;
  private final Evictor evictor;

  /** Where {@link #decide} learns how far an insert went; refilled by each. */
  private final InsertResult insertResult = new InsertResult();

  private final L3Sink sink;
  private final int pageSize;
  private final long backupThreshold;

  final ArrayDeque<L3Write> writes = new ArrayDeque<>();
  long writeSequence;

  /** PROBING, FETCHING and DRAINING prefetches, in start order (the reduction's order). */
  final ArrayList<Prefetch> pending = new ArrayList<>();

  /** Prefetches of live requests by request id: pending ones and DONE ones not yet admitted. */
  final LongMap<Prefetch> byRequest = new LongMap<>(8);

  long prefetchSequence;

  long writesRegistered;
  long writesCommitted;
  long writesFailed;
  long pagesWritten;
  long prefetchesStarted;
  long prefetchesSkipped;
  long prefetchesTimedOut;
  long prefetchesAborted;
  long prefetchesDone;
  long pagesReserved;
  long pagesInserted;
  long pagesDuplicate;
  long pagesMissed;

  L3Tier(L3Config config, CacheTree tree, PoolLedger ledger, Evictor evictor, L3Sink sink) {
    this.config = config;
    this.tree = tree;
    this.ledger = ledger;
    this.evictor = evictor;
    this.sink = sink;
    this.pageSize = tree.pageSize;
    this.backupThreshold = config.backupThreshold();
  }

  L3Stats stats() {
    return new L3Stats(
        writesRegistered,
        writesCommitted,
        writesFailed,
        pagesWritten,
        prefetchesStarted,
        prefetchesSkipped,
        prefetchesTimedOut,
        prefetchesAborted,
        prefetchesDone,
        pagesReserved,
        pagesInserted,
        pagesDuplicate,
        pagesMissed);
  }

  int outstanding() {
    return writes.size() + pending.size();
  }

  // ---------------------------------------------------------------- writes

  /**
   * Asked at a host commit and at every hit: writes the node (and its ancestors not in L3) if it
   * is host-committed, not in L3 yet and hit often enough.
   */
  void maybeWrite(RadixNode node) {
    if (node.l3State != RadixNode.L3_NONE
        || node.backupState != BackupState.COMMITTED
        || node.invalid != 0
        || node.hitCount < backupThreshold
        || node.parent == null) {
      return;
    }
    int count = 1;
    int pages = node.pageCount;
    RadixNode top = node;
    while (top.parent.parent != null && top.parent.l3State == RadixNode.L3_NONE) {
      top = top.parent;
      if (top.backupState != BackupState.COMMITTED || top.invalid != 0) {
        return;
      }
      count++;
      pages += top.pageCount;
    }
    RadixNode[] chain = new RadixNode[count];
    int i = count;
    for (RadixNode n = node; i > 0; n = n.parent) {
      chain[--i] = n;
    }
    byte[][] hashes = new byte[pages][];
    int[] slots = new int[pages];
    L3Write write = new L3Write(writeSequence++, pages);
    int offset = 0;
    for (RadixNode n : chain) {
      byte[][] h = tree.pageHashes(n);
      System.arraycopy(h, 0, hashes, offset, n.pageCount);
      System.arraycopy(n.hostSlots, n.hostOffset, slots, offset, n.pageCount);
      offset += n.pageCount;
      ledger.account(n, -1);
      n.hostRef++;
      n.l3State = RadixNode.L3_WRITING;
      n.pendingL3Write = write;
      ledger.account(n, +1);
      write.nodes.add(n);
    }
    sink.put(hashes, slots);
    writes.add(write);
    writesRegistered++;
  }

  /** Commits exactly {@code n} writes from the head; those in {@code failed} are not stored. */
  void commitWrites(int n, BitSet failed) {
    if (n < 0 || n > writes.size()) {
      throw new IllegalArgumentException(
          "cannot commit "
              + n
              + " L3 writes: "
              + writes.size()
              + " are pending; pass 0.."
              + writes.size());
    }
    sink.committedPuts(n);
    for (int i = 0; i < n; i++) {
      L3Write write = writes.poll();
      boolean fail = failed.get(i);
      if (fail) {
        writesFailed++;
      } else {
        writesCommitted++;
        pagesWritten += write.pages;
      }
      for (RadixNode node : write.nodes) {
        ledger.account(node, -1);
        node.hostRef--;
        node.pendingL3Write = null;
        node.l3State = fail ? RadixNode.L3_NONE : RadixNode.L3_STORED;
        ledger.account(node, +1);
        if (!fail) {
          tree.events.stored(CacheMedium.L3, node);
        }
        if (node.invalid != 0) {
          tree.releaseInvalid(node);
        } else {
          tree.keyChanged(node);
        }
      }
    }
  }

  // ---------------------------------------------------------------- prefetch: start and abort

  /**
   * Starts a prefetch of the request's pages beyond {@code anchor} (the last node of its host
   * hit) if there are at least {@code prefetchThreshold} tokens of them and the anchor may take
   * host-only children (the root, or a valid host-committed node).
   */
  boolean start(long requestId, long namespace, int[] tokens, int aligned, RadixNode anchor) {
    if (byRequest.get(requestId) != null) {
      throw new IllegalStateException(
          "startPrefetch of request id="
              + requestId
              + ": it has a"
              + " prefetch already; admit the request or cancel the prefetch first");
    }
    boolean root = anchor.parent == null;
    if (!root && (anchor.backupState != BackupState.COMMITTED || !CacheTree.pathValid(anchor))) {
      return false;
    }
    int pages = (aligned - anchor.depth) / pageSize;
    if (pages <= 0 || (long) pages * pageSize < config.prefetchThreshold()) {
      return false;
    }
    byte[] prior = root ? PageHasher.seed(namespace) : last(tree.pageHashes(anchor));
    byte[][] hashes = PageHasher.chain(prior, tokens, anchor.depth, pages, pageSize);
    Prefetch op =
        new Prefetch(
            prefetchSequence++, requestId, namespace, tokens, anchor.depth, pages, hashes, anchor);
    tree.lock(anchor);
    pending.add(op);
    byRequest.put(requestId, op);
    prefetchesStarted++;
    sink.probe(op.sequence, hashes, config.timeoutNanos((long) pages * pageSize));
    return true;
  }

  private static byte[] last(byte[][] hashes) {
    return hashes[hashes.length - 1];
  }

  /** The request was aborted: its prefetch ends now, or drains if fetches may still run. */
  void cancel(long requestId) {
    Prefetch op = byRequest.remove(requestId);
    if (op == null) {
      return;
    }
    prefetchesAborted++;
    switch (op.state) {
      case PROBING -> {
        pending.remove(op);
        sink.forget(op.sequence);
        unlock(op);
        op.state = Prefetch.State.DONE;
      }
      case FETCHING -> {
        pagesMissed += op.reservedPages;
        unlock(op);
        op.state = Prefetch.State.DRAINING;
        sink.cancel(op.sequence);
      }
      case DONE -> unlock(op);
      default -> throw new IllegalStateException(op + " cannot be live and draining");
    }
  }

  /** At the request's admission: the DONE prefetch's outcome; releases its lock. */
  PrefetchOutcome take(long requestId) {
    Prefetch op = byRequest.get(requestId);
    if (op == null) {
      return null;
    }
    if (op.state != Prefetch.State.DONE) {
      throw new IllegalStateException(
          "admit of request id="
              + requestId
              + ": its L3 prefetch"
              + " is still "
              + op.state
              + "; admit it once prefetchState says DONE, or cancel it");
    }
    byRequest.remove(requestId);
    unlock(op);
    return new PrefetchOutcome(requestId, op.startToken, op.insertedTokens);
  }

  private void unlock(Prefetch op) {
    if (op.lockNode != null) {
      tree.unlock(op.lockNode);
      op.lockNode = null;
    }
  }

  // ---------------------------------------------------------------- prefetch: the agreed steps

  /** This rank's three values per pending prefetch, in order. */
  int prefetchWidth() {
    return PREFETCH_WIDTH * pending.size();
  }

  /**
   * Applies the agreed values of the first {@code count} pending prefetches (the ones the
   * reduction covered), three per prefetch from {@code offset}.
   */
  void commitPrefetches(long[] agreed, int offset, int count) {
    if (count < 0
        || count > pending.size()
        || offset < 0
        || offset + PREFETCH_WIDTH * count > agreed.length) {
      throw new IllegalArgumentException(
          "cannot apply "
              + count
              + " prefetch results at offset "
              + offset
              + " of "
              + agreed.length
              + " values: "
              + pending.size()
              + " are pending");
    }
    Prefetch[] ops = pending.subList(0, count).toArray(new Prefetch[0]);
    for (int k = 0; k < count; k++) {
      Prefetch op = ops[k];
      long progress = agreed[offset + PREFETCH_WIDTH * k];
      boolean gaveUp = agreed[offset + PREFETCH_WIDTH * k + 1] < 0;
      boolean finished = agreed[offset + PREFETCH_WIDTH * k + 2] > 0;
      switch (op.state) {
        case PROBING -> {
          if (progress >= 0) {
            reserveAndFetch(op, (int) Math.min(progress, op.candidatePages));
          } else if (gaveUp) {
            prefetchesTimedOut++;
            end(op, 0);
          }
        }
        case FETCHING -> {
          L3PrefetchPolicy policy = config.prefetchPolicy();
          if (finished
              || policy == L3PrefetchPolicy.BEST_EFFORT
              || (policy == L3PrefetchPolicy.TIMEOUT && gaveUp)) {
            if (!finished && policy == L3PrefetchPolicy.TIMEOUT) {
              prefetchesTimedOut++;
            }
            decide(op, (int) Math.max(0, Math.min(progress, op.reservedPages)), finished);
          }
        }
        case DRAINING -> {
          if (finished) {
            releaseHeld(op);
            pending.remove(op);
            sink.forget(op.sequence);
          }
        }
        default -> throw new IllegalStateException(op + " is not pending");
      }
    }
  }

  private void reserveAndFetch(Prefetch op, int hits) {
    if ((long) hits * pageSize < config.prefetchThreshold()) {
      prefetchesSkipped++;
      end(op, 0);
      return;
    }
    int free = ledger.hostPool.free();
    if (free < hits) {
      evictor.evictHost(hits - free);
    }
    int pages = Math.min(hits, ledger.hostPool.free());
    if ((long) pages * pageSize < config.prefetchThreshold()) {
      prefetchesSkipped++;
      end(op, 0);
      return;
    }
    int[] slots = new int[pages];
    ledger.hostPool.allocate(pages, slots, 0);
    ledger.reservedHostPages += pages;
    op.hostSlots = slots;
    op.reservedPages = pages;
    op.heldFrom = 0;
    op.state = Prefetch.State.FETCHING;
    pagesReserved += pages;
    sink.fetch(op.sequence, op.pageHashes, pages, slots);
  }

  /**
   * Takes the first {@code fetched} pages (every rank has them) into the tree and gives up the
   * rest: freed now if every rank's fetch has finished, else after it has.
   */
  private void decide(Prefetch op, int fetched, boolean finished) {
    int inserted = 0;
    RadixNode deepest = null;
    if (fetched > 0 && CacheTree.pathValid(op.lockNode)) {
      int end = op.startToken + fetched * pageSize;
      InsertResult result = insertResult;
      int reached =
          tree.insertHostOnly(op.lockNode, op.tokens, op.startToken, end, op.hostSlots, result);
      inserted = (reached - op.startToken) / pageSize;
      deepest = result.node;
      pagesDuplicate += result.hostDuplicates;
      pagesInserted += inserted - result.hostDuplicates;
      // Pages the walk did not reach (it stopped at a node it may not extend) go back now:
      // every rank has finished writing them.
      ledger.hostPool.release(op.hostSlots, inserted, fetched - inserted);
    } else if (fetched > 0) {
      ledger.hostPool.release(op.hostSlots, 0, fetched);
    }
    ledger.reservedHostPages -= fetched;
    pagesMissed += op.reservedPages - fetched;
    op.heldFrom = fetched;
    op.insertedTokens = inserted * pageSize;
    prefetchesDone++;
    if (deepest != null && inserted > 0) {
      tree.lock(deepest);
    }
    RadixNode anchor = op.lockNode;
    op.lockNode = inserted > 0 ? deepest : null;
    tree.unlock(anchor);
    Prefetch live = byRequest.get(op.requestId);
    if (finished) {
      releaseHeld(op);
      pending.remove(op);
      sink.forget(op.sequence);
      op.state = Prefetch.State.DONE;
    } else {
      sink.cancel(op.sequence);
      // The request may go on at once; the op stays pending only to drain its slots, and a
      // separate DONE record carries the outcome.
      Prefetch done =
          new Prefetch(
              op.sequence,
              op.requestId,
              op.namespace,
              op.tokens,
              op.startToken,
              op.candidatePages,
              op.pageHashes,
              null);
      done.lockNode = op.lockNode;
      done.insertedTokens = op.insertedTokens;
      done.state = Prefetch.State.DONE;
      op.lockNode = null;
      op.state = Prefetch.State.DRAINING;
      if (live == op) {
        byRequest.put(op.requestId, done);
      }
    }
  }

  /** Ends a prefetch that reserved nothing (probe below threshold, no room, timed out). */
  private void end(Prefetch op, int inserted) {
    pending.remove(op);
    sink.forget(op.sequence);
    unlock(op);
    op.insertedTokens = inserted;
    op.state = Prefetch.State.DONE;
  }

  private void releaseHeld(Prefetch op) {
    int held = op.heldPages();
    if (held > 0) {
      ledger.hostPool.release(op.hostSlots, op.heldFrom, held);
      ledger.reservedHostPages -= held;
      op.heldFrom = op.reservedPages;
    }
  }

  /** The pending prefetches, for the reduction (replicated order). */
  List<Prefetch> pendingView() {
    return pending;
  }
}
