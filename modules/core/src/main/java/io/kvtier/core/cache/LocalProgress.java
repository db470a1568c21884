package io.kvtier.core.cache;

import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.util.ArrayDeque;
import java.util.BitSet;
import java.util.Iterator;

/**
 * Rank-local progress of this rank's copies (ARCHITECTURE.md §4, right column): the transfer engine
 * and every {@link TransferHandle} it returned, grouped per ack in the order of the two
 * replicated FIFOs, plus the layer copies streamed for prepared backups not yet attached.
 *
 * <p>The replicated side sees this object only as a {@link CopySink}, which starts copies and
 * returns nothing. The answers about completion leave only here, and only {@link
 * CommitProtocol} holds this type to ask them (the invariant checks read it too): the
 * ready-prefix counts and local failure sets that the rank protocol reduces across ranks (MIN,
 * OR) before they come back through the commit calls
 * ({@link #readyWritePrefix()}, {@link #readyLoadPrefix()}, {@link #localWriteFailures}, {@link
 * #localLoadFailures}), the model thread's layer waits on a load ({@link #isLoadLayerDone},
 * {@link #awaitLoadLayer}), which decide nothing, and one exit that exists only for a
 * deliberately broken test variant ({@link #streamedDoneDrainTimed}).
 */
final class LocalProgress implements CopySink {
  /** The engine; null for a cache without a host tier, which never copies. */
  private final TransferEngine engine;

  /** Copy groups of the write FIFO, one per ack, head first. */
  private final ArrayDeque<TransferHandle[]> writes = new ArrayDeque<>();

  /** Copy groups of the load FIFO (one handle per layer), head first. */
  private final ArrayDeque<TransferHandle[]> loads = new ArrayDeque<>();

  /** The load sequence number of the head of {@link #loads}. */
  private long loadHeadSequence;

  /** Layer copies of prepared backups not yet attached or retired, by request id. */
  private final LongMap<TransferHandle[]> streamed = new LongMap<>(8);

  /**
   * The sums of the host pool's blocks; null without a host pool or for one that holds no bytes
   * ({@code HostMemory.holdsBytes}), whose copies are then submitted unchecked.
   */
  private final HostChecksums sums;

  LocalProgress(TransferEngine engine, HostChecksums sums) {
    if (engine == null && sums != null) {
      throw new IllegalArgumentException("host checksums without a transfer engine");
    }
    this.engine = engine;
    this.sums = sums;
  }

  private TransferHandle submit(TransferBatch batch, boolean toHost) {
    return sums == null
        ? engine.submit(batch)
        : engine.submit(batch, toHost ? sums.record : sums.verify);
  }

  // ---------------------------------------------------------------- in: the sink

  @Override
  public void write(TransferBatch batch) {
    writes.addLast(new TransferHandle[] {submit(batch, true)});
  }

  @Override
  public void load(TransferBatch[] layers) {
    TransferHandle[] group = new TransferHandle[layers.length];
    for (int i = 0; i < layers.length; i++) {
      try {
        group[i] = submit(layers[i], false);
      } catch (RuntimeException e) {
        throw new SubmitFailure(i, e);
      }
    }
    loads.addLast(group);
  }

  @Override
  public void stream(long requestId, int layers, TransferBatch batch) {
    TransferHandle copy = submit(batch, true);
    TransferHandle[] copies = streamed.get(requestId);
    if (copies == null) {
      copies = new TransferHandle[layers];
      streamed.put(requestId, copies);
    }
    copies[batch.layer().orElseThrow()] = copy;
  }

  @Override
  public void writeWithStreamed(long requestId, TransferBatch[] catchUp) {
    TransferHandle[] copies = streamed.remove(requestId);
    int count = catchUp.length;
    if (copies != null) {
      for (TransferHandle h : copies) {
        count += h == null ? 0 : 1;
      }
    }
    TransferHandle[] group = new TransferHandle[count];
    int i = 0;
    if (copies != null) {
      for (TransferHandle h : copies) {
        if (h != null) {
          group[i++] = h;
        }
      }
    }
    try {
      for (TransferBatch b : catchUp) {
        group[i] = submit(b, true);
        i++;
      }
    } finally {
      // Also on a failed submission: what already runs is filed under the entry the caller
      // queues for it, so the groups keep pairing with the replicated FIFO.
      writes.addLast(i == group.length ? group : java.util.Arrays.copyOf(group, i));
    }
  }

  @Override
  public void committedWrites(int n) {
    for (int i = 0; i < n; i++) {
      writes.removeFirst();
    }
  }

  @Override
  public void committedLoads(int n) {
    for (int i = 0; i < n; i++) {
      loads.removeFirst();
    }
    loadHeadSequence += n;
  }

  // ---------------------------------------------------------------- out: counts for agreement

  /** Write acks from the FIFO head whose every copy has finished on this rank. */
  int readyWritePrefix() {
    return readyPrefix(writes);
  }

  /** Load acks from the FIFO head whose every layer copy has finished on this rank. */
  int readyLoadPrefix() {
    return readyPrefix(loads);
  }

  /** Which of the first {@code n} write acks had a failed copy on this rank. */
  BitSet localWriteFailures(int n) {
    return failures("write", writes, n, "readyWritePrefix()");
  }

  /** Which of the first {@code n} load acks had a failed copy on this rank. */
  BitSet localLoadFailures(int n) {
    return failures("load", loads, n, "readyLoadPrefix()");
  }

  // ---------------------------------------------------------------- out: the model's layer waits

  /** Whether layer {@code layer} of pending load {@code sequence} has finished copying here. */
  boolean isLoadLayerDone(long sequence, int layer) {
    return loadGroup(sequence)[layer].isDone();
  }

  /** Blocks until layer {@code layer} of pending load {@code sequence} is copied here. */
  void awaitLoadLayer(long sequence, int layer) throws InterruptedException {
    loadGroup(sequence)[layer].await();
  }

  private TransferHandle[] loadGroup(long sequence) {
    long index = sequence - loadHeadSequence;
    Iterator<TransferHandle[]> it = loads.iterator();
    for (long i = 0; i < index; i++) {
      it.next();
    }
    return it.next();
  }

  // ---------------------------------------------------------------- out: the broken variant only

  /**
   * Whether every streamed copy of a prepared backup has finished on this rank. Drain-timed and
   * rank-local: no real rule may call this. It exists only for {@code
   * CacheTestHooks.useDrainTimedAttachPredicate}, the seed defect the simulator must catch.
   */
  boolean streamedDoneDrainTimed(long requestId) {
    TransferHandle[] copies = streamed.get(requestId);
    if (copies != null) {
      for (TransferHandle h : copies) {
        if (h != null && !h.isDone()) {
          return false;
        }
      }
    }
    return true;
  }

  // ---------------------------------------------------------------- for the invariant checker

  int writeGroups() {
    return writes.size();
  }

  int loadGroups() {
    return loads.size();
  }

  /** Requests with streamed copies not yet filed under an ack. */
  int streamingRequests() {
    return streamed.size();
  }

  // ---------------------------------------------------------------- helpers

  private static int readyPrefix(ArrayDeque<TransferHandle[]> queue) {
    int ready = 0;
    for (TransferHandle[] group : queue) {
      for (TransferHandle h : group) {
        if (!h.isDone()) {
          return ready;
        }
      }
      ready++;
    }
    return ready;
  }

  private static BitSet failures(
      String kind, ArrayDeque<TransferHandle[]> queue, int n, String ready) {
    if (n < 0 || n > queue.size()) {
      throw new IllegalArgumentException(
          "cannot report failures of "
              + n
              + " "
              + kind
              + " acks: "
              + queue.size()
              + " are pending; pass 0.."
              + queue.size());
    }
    BitSet failed = new BitSet();
    int i = 0;
    for (TransferHandle[] group : queue) {
      if (i == n) {
        break;
      }
      for (TransferHandle h : group) {
        if (!h.isDone()) {
          throw new IllegalStateException(
              kind
                  + " ack "
                  + i
                  + " has not finished copying on"
                  + " this rank: pass at most "
                  + ready
                  + " acks");
        }
        if (h.failure().isPresent()) {
          failed.set(i);
        }
      }
      i++;
    }
    return failed;
  }

  /** The failure of a layer wait on a load that was committed as failed. */
  static TransferFailedException failedLoad(LoadBack load, int layer) {
    return new TransferFailedException(
        "layer "
            + layer
            + " of "
            + load
            + " failed to copy on"
            + " some rank and the load was committed as failed: abort the request",
        null);
  }
}
