package io.kvtier.backend.sim;

import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A hand-written fake engine whose batches complete only when the test says so, in any order the
 * test likes: the way to make an engine break FIFO on purpose. It copies nothing.
 */
final class ManualTransferEngine implements TransferEngine {
  private final Map<TransferDirection, List<Handle>> handles =
      new EnumMap<>(TransferDirection.class);
  boolean closed;

  ManualTransferEngine() {
    for (TransferDirection d : TransferDirection.values()) {
      handles.put(d, new ArrayList<>());
    }
  }

  @Override
  public synchronized TransferHandle submit(TransferBatch batch) {
    if (closed) {
      throw new IllegalStateException("closed");
    }
    List<Handle> list = handles.get(batch.direction());
    Handle h = new Handle(list.size(), batch);
    list.add(h);
    return h;
  }

  /** Completes one batch, successfully or not, whatever came before it. */
  synchronized void complete(TransferDirection direction, int sequence, boolean fail) {
    Handle h = handles.get(direction).get(sequence);
    h.failure =
        fail ? Optional.of(new TransferFailedException("fake failure", null)) : Optional.empty();
    h.done = true;
  }

  @Override
  public synchronized int inFlight() {
    return (int) handles.values().stream().flatMap(List::stream).filter(h -> !h.done).count();
  }

  @Override
  public synchronized void close() {
    closed = true;
  }

  private static final class Handle implements TransferHandle {
    final long sequence;
    final TransferBatch batch;
    volatile boolean done;
    volatile Optional<Throwable> failure = Optional.empty();

    Handle(long sequence, TransferBatch batch) {
      this.sequence = sequence;
      this.batch = batch;
    }

    @Override
    public long sequence() {
      return sequence;
    }

    @Override
    public TransferBatch batch() {
      return batch;
    }

    @Override
    public boolean isDone() {
      return done;
    }

    @Override
    public Optional<Throwable> failure() {
      return done ? failure : Optional.empty();
    }

    @Override
    public void await() {
      if (!done) {
        throw new AssertionError("the fake engine's await() needs the batch completed first");
      }
      if (failure.isPresent()) {
        throw (TransferFailedException) failure.get();
      }
    }

    @Override
    public boolean await(Duration timeout) {
      if (done) {
        await();
      }
      return done;
    }
  }
}
