package io.kvtier.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link TransferEngine#submit(TransferBatch, CopyCheck)}'s default: the check runs once, after a
 * successful copy, on the first look at a done handle, and its failure is the batch's.
 */
class CheckedTransferHandleTest {
  private static final TransferBatch BATCH =
      TransferBatch.allLayers(TransferDirection.HOST_TO_DEVICE, new int[] {1}, new int[] {2});

  @Test
  void theCheckRunsOnceAfterTheCopyAndNotBefore() throws Exception {
    Copy copy = new Copy();
    AtomicInteger runs = new AtomicInteger();
    TransferHandle h = new Engine(copy).submit(BATCH, b -> runs.incrementAndGet());

    assertThat(h.isDone()).isFalse();
    assertThat(h.failure()).isEmpty();
    assertThat(runs).hasValue(0);
    copy.done = true;

    assertThat(h.isDone()).isTrue();
    assertThat(h.failure()).isEmpty();
    h.await();
    assertThat(h.await(Duration.ZERO)).isTrue();
    assertThat(runs).hasValue(1);
    assertThat(h.batch()).isEqualTo(BATCH);
  }

  @Test
  void aFailedCheckFailsTheBatchOnEveryLook() {
    Copy copy = new Copy();
    copy.done = true;
    TransferHandle h =
        new Engine(copy)
            .submit(
                BATCH,
                b -> {
                  throw new TransferFailedException("host page 2 changed", null);
                });

    assertThat(h.isDone()).isTrue();
    assertThat(h.failure()).get().asString().contains("host page 2 changed");
    assertThatThrownBy(h::await).hasMessageContaining("host page 2 changed");
    assertThatThrownBy(() -> h.await(Duration.ZERO)).hasMessageContaining("host page 2 changed");
  }

  @Test
  void aCheckThatThrowsSomethingElseFailsTheBatchNamingIt() {
    Copy copy = new Copy();
    copy.done = true;
    TransferHandle h =
        new Engine(copy)
            .submit(
                BATCH,
                b -> {
                  throw new IllegalStateException("a bug in the check");
                });

    assertThat(h.failure())
        .get()
        .isInstanceOf(TransferFailedException.class)
        .asString()
        .contains("a bug in the check");
  }

  @Test
  void aFailedCopyIsNeverChecked() {
    Copy copy = new Copy();
    copy.done = true;
    copy.failure = new TransferFailedException("copy failed", null);
    AtomicInteger runs = new AtomicInteger();
    TransferHandle h = new Engine(copy).submit(BATCH, b -> runs.incrementAndGet());

    assertThat(h.failure()).containsSame(copy.failure);
    assertThatThrownBy(h::await).isSameAs(copy.failure);
    assertThat(runs).hasValue(0);
  }

  /** A copy whose completion the test sets. */
  private static final class Copy implements TransferHandle {
    volatile boolean done;
    volatile TransferFailedException failure;

    @Override
    public long sequence() {
      return 0;
    }

    @Override
    public TransferBatch batch() {
      return BATCH;
    }

    @Override
    public boolean isDone() {
      return done;
    }

    @Override
    public Optional<Throwable> failure() {
      return done ? Optional.ofNullable(failure) : Optional.empty();
    }

    @Override
    public void await() {
      if (!done) {
        throw new AssertionError("the test awaits only done copies");
      }
      if (failure != null) {
        throw failure;
      }
    }

    @Override
    public boolean await(Duration timeout) {
      if (!done) {
        return false;
      }
      await();
      return true;
    }
  }

  /** An engine that hands out one copy and keeps the SPI's default checked submit. */
  private record Engine(Copy copy) implements TransferEngine {
    @Override
    public TransferHandle submit(TransferBatch batch) {
      return copy;
    }

    @Override
    public int inFlight() {
      return 0;
    }

    @Override
    public void close() {}
  }
}
