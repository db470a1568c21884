package io.kvtier.core.cache;

import io.kvtier.core.config.L3Config;
import io.kvtier.core.config.L3PrefetchPolicy;
import java.util.ArrayList;
import java.util.List;

/**
 * The prefetch half of the L3 tier (CACHE.md §12): the pending prefetches, each a state machine
 * ({@link Prefetch.State}) that moves only on agreed (reduced) progress.
 *
 * <p>The probe's hit is agreed with MIN before any slot is reserved (shards differ per rank), the
 * reservation is replicated because pool occupancy is, and the policy decides from the agreed
 * MIN of pages fetched, the agreed MAX of "gave up" and the agreed MIN of "finished". Pages are
 * inserted as host-only nodes below the anchor, which is locked (with the path to the root) for
 * the whole prefetch; slots a rank may still be writing are freed only once every rank reports
 * its fetch finished.
 */
final class L3Prefetches {
  /** Reduction elements per pending prefetch (see {@link L3Progress#prefetchProgress}). */
  static final int WIDTH = 3;

  private final L3Config config;
  private final CacheTree tree;
  private final PoolLedger ledger;
  private final Evictor evictor;
  private final L3Sink sink;
  private final L3Counters counters;
  private final int pageSize;

  /**
   * Page slots of one recurrent-state snapshot; 0 = the model has none (pages only). At least 0
   * ({@code CacheConfig} checks it).
   */
  private final int snapshotSlots;

  /** Where {@link #decide} learns how far an insert went; refilled by each. */
  private final InsertResult insertResult = new InsertResult();

  /** PROBING, FETCHING and DRAINING prefetches, in start order (the reduction's order). */
  final ArrayList<Prefetch> pending = new ArrayList<>();

  /** Prefetches of live requests by request id: pending ones and DONE ones not yet admitted. */
  final LongMap<Prefetch> byRequest = new LongMap<>(8);

  /** The next prefetch's sequence number. */
  long sequence;

  L3Prefetches(
      L3Config config,
      CacheTree tree,
      PoolLedger ledger,
      Evictor evictor,
      L3Sink sink,
      L3Counters counters,
      int snapshotSlots) {
    this.config = config;
    this.tree = tree;
    this.ledger = ledger;
    this.evictor = evictor;
    this.sink = sink;
    this.counters = counters;
    this.pageSize = tree.pageSize;
    this.snapshotSlots = snapshotSlots;
  }

  /**
   * Starts a prefetch of the request's pages beyond {@code anchor} (the last node of its host
   * hit) if there are at least {@code prefetchThreshold} tokens of them and the anchor may take
   * host-only children (the root, or a valid host-committed node).
   */
  boolean start(
      long requestId,
      long namespace,
      int[] tokens,
      int aligned,
      RadixNode anchor,
      boolean awaitTransfer) {
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
    if (pages <= 0 || (!awaitTransfer && (long) pages * pageSize < config.prefetchThreshold())) {
      return false;
    }
    // Only the chain's start is hashed here: the rank hashes the candidate pages themselves, as
    // far as its probe and fetch look (most probes stop at the first page).
    byte[] prior = root ? PageHasher.seed(namespace) : last(tree.pageHashes(anchor));
    CandidatePages candidates = new CandidatePages(prior, tokens, anchor.depth, pages, pageSize);
    Prefetch op = new Prefetch(sequence++, requestId, namespace, candidates, snapshotSlots, anchor);
    op.awaitTransfer = awaitTransfer;
    tree.lock(anchor);
    pending.add(op);
    byRequest.put(requestId, op);
    counters.increment(L3Counter.PREFETCHES_STARTED);
    sink.probe(
        op.sequence, candidates, snapshotSlots, config.timeoutNanos((long) pages * pageSize));
    return true;
  }

  static byte[] last(byte[][] hashes) {
    return hashes[hashes.length - 1];
  }

  /** The request was aborted: its prefetch ends now, or drains if fetches may still run. */
  void cancel(long requestId) {
    Prefetch op = byRequest.remove(requestId);
    if (op == null) {
      return;
    }
    counters.increment(L3Counter.PREFETCHES_ABORTED);
    switch (op.state) {
      case PROBING -> {
        pending.remove(op);
        sink.forget(op.sequence);
        unlock(op);
        op.state = Prefetch.State.DONE;
      }
      case FETCHING -> {
        counters.add(L3Counter.PAGES_MISSED, op.fetchPages);
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

  /** This rank's three values per pending prefetch, in order. */
  int prefetchWidth() {
    return WIDTH * pending.size();
  }

  /**
   * Applies the agreed values of the first {@code count} pending prefetches (the ones the
   * reduction covered), three per prefetch from {@code offset}.
   */
  void commitPrefetches(long[] agreed, int offset, int count) {
    if (count < 0
        || count > pending.size()
        || offset < 0
        || offset + WIDTH * count > agreed.length) {
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
      long progress = agreed[offset + WIDTH * k];
      boolean gaveUp = agreed[offset + WIDTH * k + 1] < 0;
      boolean finished = agreed[offset + WIDTH * k + 2] > 0;
      switch (op.state) {
        case PROBING -> {
          if (progress >= 0 && op.snapshotSlots > 0) {
            agreeOnSnapshot(op, progress, agreed[offset + WIDTH * k + 2]);
          } else if (progress >= 0) {
            reserveAndFetch(op, (int) Math.min(progress, op.candidatePages));
          } else if (gaveUp) {
            counters.increment(L3Counter.PREFETCHES_TIMED_OUT);
            end(op, 0);
          }
        }
        case FETCHING -> {
          L3PrefetchPolicy policy =
              op.awaitTransfer ? L3PrefetchPolicy.TIMEOUT : config.prefetchPolicy();
          if (finished
              || policy == L3PrefetchPolicy.BEST_EFFORT
              || (policy == L3PrefetchPolicy.TIMEOUT && gaveUp)) {
            if (!finished && policy == L3PrefetchPolicy.TIMEOUT) {
              counters.increment(L3Counter.PREFETCHES_TIMED_OUT);
            }
            decide(op, (int) Math.max(0, Math.min(progress, fetchUnits(op))), finished);
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

  /**
   * Every rank's probe finished with the snapshot of its deepest usable end at most {@code
   * op.probeBound} ({@link L3Progress#prefetchProgress}): {@code least} is the MIN of those
   * ends, {@code finishedValue} the MIN of {@code 1 + probeBound - end}, from which the MAX of
   * the ends follows. Equal ends are a snapshot every rank has; else every rank probes again
   * below the MIN, whose end some rank named but others may lack (a rank's deepest end is not
   * every rank's). Each round lowers the bound, so the agreement ends.
   */
  private void agreeOnSnapshot(Prefetch op, long least, long finishedValue) {
    int end = (int) Math.min(least, op.probeBound);
    long most = op.probeBound + 1L - finishedValue;
    if (end == 0 || belowThreshold(op, end) || most == end) {
      reserveAndFetch(op, end);
      return;
    }
    op.probeBound = end;
    sink.reprobe(op.sequence, end);
  }

  /** The units the agreed fetch progress counts: pages, and 1 for a complete snapshot. */
  private static int fetchUnits(Prefetch op) {
    return op.fetchPages + (op.snapshotSlots > 0 ? 1 : 0);
  }

  /**
   * Whether {@code pages} are too few to fetch: below the prefetch threshold, or for a
   * transfer's decode side none at all.
   */
  private boolean belowThreshold(Prefetch op, int pages) {
    return op.awaitTransfer ? pages <= 0 : (long) pages * pageSize < config.prefetchThreshold();
  }

  private void reserveAndFetch(Prefetch op, int hits) {
    if (belowThreshold(op, hits)) {
      counters.increment(L3Counter.PREFETCHES_SKIPPED);
      end(op, 0);
      return;
    }
    // With snapshots, an agreed end of 0 (no snapshot every rank found) is below the threshold
    // (at least 1 token, L3Config) and ended above.
    if (op.snapshotSlots > 0) {
      reserveWithSnapshot(op, hits);
      return;
    }
    int free = ledger.hostPool.free();
    if (free < hits) {
      evictor.evictHost(hits - free);
    }
    int pages = Math.min(hits, ledger.hostPool.free());
    if (belowThreshold(op, pages)) {
      counters.add(L3Counter.PAGES_NO_HOST_ROOM, hits);
      counters.increment(L3Counter.PREFETCHES_SKIPPED);
      end(op, 0);
      return;
    }
    counters.add(L3Counter.PAGES_NO_HOST_ROOM, hits - pages);
    int[] slots = new int[pages];
    ledger.hostPool.allocate(pages, slots, 0);
    ledger.reservedHostPages += pages;
    op.hostSlots = slots;
    op.reservedPages = pages;
    op.fetchPages = pages;
    op.heldFrom = 0;
    op.state = Prefetch.State.FETCHING;
    counters.add(L3Counter.PAGES_RESERVED, pages);
    sink.fetch(op.sequence, pages, slots, 0);
  }

  /**
   * Reserves the pages up to the agreed usable end and the snapshot's slots after them, all or
   * nothing: pages past a snapshot or without one are no resume point.
   */
  private void reserveWithSnapshot(Prefetch op, int pages) {
    int slotsNeeded = pages + op.snapshotSlots;
    int free = ledger.hostPool.free();
    if (free < slotsNeeded) {
      evictor.evictHost(slotsNeeded - free);
    }
    if (ledger.hostPool.free() < slotsNeeded) {
      counters.add(L3Counter.PAGES_NO_HOST_ROOM, pages);
      counters.increment(L3Counter.PREFETCHES_SKIPPED);
      end(op, 0);
      return;
    }
    int[] slots = new int[slotsNeeded];
    ledger.hostPool.allocate(slotsNeeded, slots, 0);
    ledger.reservedHostPages += slotsNeeded;
    op.hostSlots = slots;
    op.reservedPages = slotsNeeded;
    op.fetchPages = pages;
    op.heldFrom = 0;
    op.state = Prefetch.State.FETCHING;
    counters.add(L3Counter.PAGES_RESERVED, pages);
    sink.fetch(op.sequence, pages, slots, op.snapshotSlots);
  }

  /**
   * Takes the first {@code fetched} pages (every rank has them) into the tree and gives up the
   * rest: freed now if every rank's fetch has finished, else after it has.
   */
  private void decide(Prefetch op, int units, boolean finished) {
    int fetched = Math.min(units, op.fetchPages);
    boolean snapshot = op.snapshotSlots > 0 && units == fetchUnits(op);
    int inserted = 0;
    RadixNode deepest = null;
    if (fetched > 0 && CacheTree.pathValid(op.lockNode)) {
      int end = op.startToken + fetched * pageSize;
      InsertResult result = insertResult;
      int reached =
          tree.insertHostOnly(
              op.lockNode, op.tokens, op.startToken, end, op.hostSlots, op.candidates, result);
      inserted = (reached - op.startToken) / pageSize;
      deepest = result.node;
      counters.add(L3Counter.PAGES_DUPLICATE, result.hostDuplicates);
      counters.add(L3Counter.PAGES_INSERTED, inserted - result.hostDuplicates);
      // Pages the walk did not reach (it stopped at a node it may not extend) go back now:
      // every rank has finished writing them.
      ledger.hostPool.release(op.hostSlots, inserted, fetched - inserted);
      if (snapshot) {
        attachSnapshot(op, inserted == fetched ? deepest : null);
      }
    } else if (fetched > 0) {
      ledger.hostPool.release(op.hostSlots, 0, fetched);
      if (snapshot) {
        attachSnapshot(op, null);
      }
    }
    ledger.reservedHostPages -= fetched;
    counters.add(L3Counter.PAGES_MISSED, op.fetchPages - fetched);
    // Every rank has written the snapshot's slots once it counts as fetched: they are taken
    // or free now; else they stay held with the pages past {@code fetched} until the drain.
    op.heldFrom = snapshot ? op.reservedPages : fetched;
    op.insertedTokens = inserted * pageSize;
    counters.increment(L3Counter.PREFETCHES_DONE);
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
              op.sequence, op.requestId, op.namespace, op.candidates, op.snapshotSlots, null);
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

  /**
   * The snapshot every rank fetched goes to {@code node}, the host-only node that ends at the
   * agreed usable end, if it has no snapshot in any tier; else (a duplicate, or the walk did not
   * reach the end) its slots are freed. Moves them from the reservation to the node in one
   * accounting bracket, so the host pool counts them once.
   */
  private void attachSnapshot(Prefetch op, RadixNode node) {
    int from = op.reservedPages - op.snapshotSlots;
    ledger.reservedHostPages -= op.snapshotSlots;
    if (node != null
        && node.parent != null
        && !node.resident()
        && node.stateSlots == null
        && node.hostStateSlots == null
        && node.hostSlots != null
        && node.backupState == BackupState.COMMITTED
        && node.invalid == 0) {
      ledger.account(node, -1);
      node.hostStateSlots = java.util.Arrays.copyOfRange(op.hostSlots, from, op.reservedPages);
      node.l3Snapshot = node.l3State == RadixNode.L3_STORED ? (byte) 1 : (byte) 0;
      ledger.account(node, +1);
      counters.increment(L3Counter.SNAPSHOTS_INSERTED);
    } else {
      ledger.hostPool.release(op.hostSlots, from, op.snapshotSlots);
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
