package io.kvtier.core.rank;

import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.Optional;

/**
 * Wraps a transfer engine and reports the {@code n}-th batch of one direction (from 0) as
 * failed once the delegate has completed it: a copy failure on one rank only.
 */
final class FailingTransferEngine implements TransferEngine {
  private final TransferEngine delegate;
  private final TransferDirection direction;
  private final int failIndex;
  private int seen;

  FailingTransferEngine(TransferEngine delegate, TransferDirection direction, int failIndex) {
    this.delegate = delegate;
    this.direction = direction;
    this.failIndex = failIndex;
  }

  @Override
  public TransferHandle submit(TransferBatch batch) {
    TransferHandle raw = delegate.submit(batch);
    if (batch.direction() != direction || seen++ != failIndex) {
      return raw;
    }
    TransferFailedException failure =
        new TransferFailedException("injected by FailingTransferEngine", null);
    return new TransferHandle() {
      @Override
      public long sequence() {
        return raw.sequence();
      }

      @Override
      public TransferBatch batch() {
        return raw.batch();
      }

      @Override
      public boolean isDone() {
        return raw.isDone();
      }

      @Override
      public Optional<Throwable> failure() {
        return raw.isDone() ? Optional.of(failure) : Optional.empty();
      }

      @Override
      public void await() throws InterruptedException {
        raw.await();
        throw failure;
      }

      @Override
      public boolean await(Duration timeout) throws InterruptedException {
        if (!raw.await(timeout)) {
          return false;
        }
        throw failure;
      }
    };
  }

  @Override
  public int inFlight() {
    return delegate.inFlight();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
