package io.kvtier.testkit.conformance;

import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A device pool, a host pool and the engine between them, with the logic that brings a copy to
 * completion whether the provider runs on the wall clock or on a virtual one.
 */
final class TransferFixture implements AutoCloseable {

  /** How long the suite waits (wall clock) for anything before calling it a hang. */
  static final Duration HANG_GUARD = Duration.ofSeconds(30);

  final DeviceMemory device;
  final HostMemory host;
  final TransferEngine engine;
  final TransferControl control;
  final boolean virtualTime;

  TransferFixture(
      DeviceMemory device,
      HostMemory host,
      TransferEngine engine,
      TransferControl control,
      boolean virtualTime) {
    this.device = device;
    this.host = host;
    this.engine = engine;
    this.control = control;
    this.virtualTime = virtualTime;
  }

  /** Returns once the handle reports done; advances the virtual clock if there is one. */
  void drive(TransferHandle handle) throws InterruptedException {
    long deadline = System.nanoTime() + HANG_GUARD.toNanos();
    long stepNanos = 1_000;
    while (!handle.isDone()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "batch "
                + handle.batch()
                + " seq "
                + handle.sequence()
                + " is not done after "
                + HANG_GUARD
                + " of wall time"
                + (virtualTime ? " while advancing virtual time" : "")
                + "; the engine never completes it");
      }
      if (virtualTime) {
        control.advance(Duration.ofNanos(stepNanos));
        // Doubling keeps the number of steps logarithmic whatever the timing model's scale is.
        stepNanos = Math.min(stepNanos * 2, 10_000_000);
        Thread.onSpinWait();
      } else {
        try {
          handle.await(Duration.ofMillis(10));
        } catch (TransferFailedException e) {
          // Done, and failed: the caller looks at failure() itself.
          return;
        }
      }
    }
  }

  /** Drives the handle to completion and awaits it, so that a failure throws. */
  void finish(TransferHandle... handles) throws InterruptedException {
    for (TransferHandle h : handles) {
      drive(h);
      h.await();
    }
  }

  /**
   * Runs {@code action} (which may block until copies complete, such as {@code close()}) on
   * another thread while advancing virtual time, or on this thread on the wall clock.
   */
  <T> T whileDriving(BlockingAction<T> action) throws Exception {
    if (!virtualTime) {
      return action.run();
    }
    CompletableFuture<T> result = new CompletableFuture<>();
    Thread worker =
        Thread.ofPlatform()
            .name("conformance-blocking-call")
            .start(
                () -> {
                  try {
                    result.complete(action.run());
                  } catch (Throwable t) {
                    result.completeExceptionally(t);
                  }
                });
    long deadline = System.nanoTime() + HANG_GUARD.toNanos();
    try {
      while (true) {
        try {
          return result.get(1, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          if (System.nanoTime() > deadline) {
            worker.interrupt();
            throw new AssertionError(
                "a blocking call did not return within "
                    + HANG_GUARD
                    + " of wall time while"
                    + " virtual time advanced",
                e);
          }
          control.advance(Duration.ofMillis(1));
        } catch (ExecutionException e) {
          switch (e.getCause()) {
            case Exception ex -> throw ex;
            case Error err -> throw err;
            default -> throw e;
          }
        }
      }
    } finally {
      worker.join(HANG_GUARD.toMillis());
    }
  }

  /** A call that may block. */
  @FunctionalInterface
  interface BlockingAction<T> {
    T run() throws Exception;
  }

  /** Closes the engine, then both pools, even when one of them fails. */
  @Override
  public void close() {
    try {
      whileDriving(
          () -> {
            engine.close();
            return null;
          });
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while closing the transfer engine", e);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new AssertionError("closing the transfer engine failed", e);
    } finally {
      try {
        device.close();
      } finally {
        host.close();
      }
    }
  }
}
