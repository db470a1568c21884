package io.kvtier.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A handle whose {@link CopyCheck} runs once, on the first thread that sees the copy done: the
 * default of {@link TransferEngine#submit(TransferBatch, CopyCheck)} for a backend without copy
 * threads of its own. The outcome does not depend on which thread runs the check, so a simulated
 * backend stays deterministic.
 */
final class CheckedTransferHandle implements TransferHandle {
  private final TransferHandle copy;
  private final CopyCheck check;
  private boolean checked;
  private TransferFailedException mismatch;

  CheckedTransferHandle(TransferHandle copy, CopyCheck check) {
    this.copy = Objects.requireNonNull(copy, "copy");
    this.check = Objects.requireNonNull(check, "check");
  }

  @Override
  public long sequence() {
    return copy.sequence();
  }

  @Override
  public TransferBatch batch() {
    return copy.batch();
  }

  @Override
  public boolean isDone() {
    if (!copy.isDone()) {
      return false;
    }
    runCheck();
    return true;
  }

  @Override
  public Optional<Throwable> failure() {
    if (!copy.isDone()) {
      return Optional.empty();
    }
    Optional<Throwable> failed = copy.failure();
    if (failed.isPresent()) {
      return failed;
    }
    return Optional.ofNullable(runCheck());
  }

  @Override
  public void await() throws InterruptedException {
    copy.await();
    throwIfMismatch();
  }

  @Override
  public boolean await(Duration timeout) throws InterruptedException {
    if (!copy.await(timeout)) {
      return false;
    }
    throwIfMismatch();
    return true;
  }

  private void throwIfMismatch() {
    TransferFailedException m = runCheck();
    if (m != null) {
      throw new TransferFailedException(m.getMessage(), m);
    }
  }

  /** Runs the check once, after a successful copy; returns its failure, or null. */
  private synchronized TransferFailedException runCheck() {
    if (!checked) {
      checked = true;
      if (copy.failure().isEmpty()) {
        try {
          check.afterCopy(copy.batch());
        } catch (TransferFailedException e) {
          mismatch = e;
        } catch (RuntimeException e) {
          mismatch = new TransferFailedException("the check after " + copy + " failed: " + e, e);
        }
      }
    }
    return mismatch;
  }

  @Override
  public String toString() {
    return copy + " (checked)";
  }
}
