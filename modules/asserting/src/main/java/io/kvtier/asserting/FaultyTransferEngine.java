package io.kvtier.asserting;

import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Wraps any transfer engine and makes some of its batches slow, stuck or failing, drawn from a
 * seeded {@link FaultPlan} or scripted with {@link #failNext}, {@link #stall} and {@link
 * #release}. Every batch is still submitted to the delegate (which checks its bounds and copies);
 * a fault only changes what the handle reports. FIFO order per direction is kept: a batch is
 * done only when every earlier batch of its direction is, so one stuck batch holds up the later
 * ones as a stuck DMA stream would.
 *
 * <p>An injected failure leaves the copied bytes in place; the contract only says the
 * destination is undefined, and code that uses it anyway is caught by the asserting pools (a
 * failed copy must not be made visible) rather than by scribbling here.
 *
 * <p>{@link #close()} releases stalled and stuck batches and stops delaying slow ones, so that it
 * can wait for the delegate without hanging.
 */
public final class FaultyTransferEngine implements TransferEngine {

  /** What is injected into one batch. */
  public enum Fault {
    /** Nothing: the batch completes with the delegate's. */
    NONE,
    /** Completes with the delegate's, then reports a {@link TransferFailedException}. */
    FAIL,
    /** Completes {@link FaultPlan#slowDelay()} after submission at the earliest. */
    SLOW,
    /** Does not complete until {@link #releaseStuck()} or close. */
    STUCK,
    /** Held by {@link #stall}; completes after {@link #release} of its direction. */
    STALLED
  }

  private final TransferEngine delegate;
  private final FaultPlan plan;
  private final TimeSource time;
  private final SplittableRandom random;
  private final Map<TransferDirection, Integer> failNext = new EnumMap<>(TransferDirection.class);
  private final Map<TransferDirection, Boolean> stalled = new EnumMap<>(TransferDirection.class);
  private final Map<TransferDirection, FaultyHandle> last = new EnumMap<>(TransferDirection.class);
  private final Set<FaultyHandle> live = ConcurrentHashMap.newKeySet();
  private final AtomicLongArray counts = new AtomicLongArray(Fault.values().length);
  private final Object signal = new Object();
  private volatile boolean closing;

  /**
   * Wraps an engine.
   *
   * @param delegate the engine that copies
   * @param plan the random faults; {@link FaultPlan#none()} for scripted faults only
   * @param time the time source of slow batches and of {@code await(timeout)}
   */
  public FaultyTransferEngine(TransferEngine delegate, FaultPlan plan, TimeSource time) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.plan = Objects.requireNonNull(plan, "plan");
    this.time = Objects.requireNonNull(time, "time");
    this.random = new SplittableRandom(plan.seed());
    for (TransferDirection d : TransferDirection.values()) {
      failNext.put(d, 0);
      stalled.put(d, false);
    }
  }

  /**
   * Makes the next batch of a direction fail.
   *
   * @param direction the direction
   */
  public synchronized void failNext(TransferDirection direction) {
    failNext.merge(Objects.requireNonNull(direction, "direction"), 1, Integer::sum);
  }

  /**
   * Holds back every batch of a direction submitted from now on, until {@link #release}.
   *
   * @param direction the direction
   */
  public synchronized void stall(TransferDirection direction) {
    stalled.put(Objects.requireNonNull(direction, "direction"), true);
  }

  /**
   * Ends a {@link #stall} and lets its held batches complete.
   *
   * @param direction the direction
   */
  public synchronized void release(TransferDirection direction) {
    stalled.put(Objects.requireNonNull(direction, "direction"), false);
    releaseWhere(h -> h.fault == Fault.STALLED && h.batch().direction() == direction);
  }

  /** Lets every batch that was drawn {@link Fault#STUCK} complete. */
  public void releaseStuck() {
    releaseWhere(h -> h.fault == Fault.STUCK);
  }

  /**
   * How many batches got a fault so far.
   *
   * @param fault the fault
   * @return the count
   */
  public long count(Fault fault) {
    return counts.get(fault.ordinal());
  }

  private void releaseWhere(java.util.function.Predicate<FaultyHandle> which) {
    live.stream().filter(which).forEach(h -> h.released = true);
    synchronized (signal) {
      signal.notifyAll();
    }
  }

  @Override
  public synchronized TransferHandle submit(TransferBatch batch) {
    Objects.requireNonNull(batch, "batch");
    if (closing) {
      throw new IllegalStateException(
          "FaultyTransferEngine is closed: submit batches before close()");
    }
    TransferHandle raw = delegate.submit(batch);
    TransferDirection d = batch.direction();
    // Drawn for every batch, scripted or not, so that scripting does not shift later draws.
    double u = random.nextDouble();
    Fault fault;
    if (failNext.get(d) > 0) {
      failNext.merge(d, -1, Integer::sum);
      fault = Fault.FAIL;
    } else if (stalled.get(d)) {
      fault = Fault.STALLED;
    } else if (u < plan.failProbability()) {
      fault = Fault.FAIL;
    } else if (u < plan.failProbability() + plan.slowProbability()) {
      fault = Fault.SLOW;
    } else if (u < plan.failProbability() + plan.slowProbability() + plan.stuckProbability()) {
      fault = Fault.STUCK;
    } else {
      fault = Fault.NONE;
    }
    counts.incrementAndGet(fault.ordinal());
    long readyAt = fault == Fault.SLOW ? time.nanoTime() + plan.slowDelay().toNanos() : 0;
    FaultyHandle h = new FaultyHandle(raw, fault, readyAt, last.get(d));
    last.put(d, h);
    live.add(h);
    return h;
  }

  @Override
  public int inFlight() {
    int n = 0;
    for (FaultyHandle h : live) {
      if (!h.isDone()) {
        n++;
      }
    }
    return n;
  }

  @Override
  public void close() {
    closing = true;
    synchronized (signal) {
      signal.notifyAll();
    }
    delegate.close();
  }

  private void pause() throws InterruptedException {
    // Timed, because slow batches and virtual clocks change state without notifying anyone.
    synchronized (signal) {
      signal.wait(1);
    }
  }

  /** The handle of one batch: the delegate's, filtered through the batch's fault. */
  private final class FaultyHandle implements TransferHandle {
    final TransferHandle raw;
    final Fault fault;
    final long readyAt;
    final TransferFailedException injected;
    volatile FaultyHandle previous;
    volatile boolean released;
    volatile boolean done;

    FaultyHandle(TransferHandle raw, Fault fault, long readyAt, FaultyHandle previous) {
      this.raw = raw;
      this.fault = fault;
      this.readyAt = readyAt;
      this.previous = previous;
      this.injected =
          fault == Fault.FAIL
              ? new TransferFailedException(
                  "injected failure of "
                      + raw.batch().direction()
                      + " seq "
                      + raw.sequence()
                      + " by FaultyTransferEngine (plan seed "
                      + plan.seed()
                      + "): the destination pages hold undefined bytes",
                  null)
              : null;
    }

    private boolean ownDone() {
      if (!raw.isDone()) {
        return false;
      }
      return switch (fault) {
        case NONE, FAIL -> true;
        case SLOW -> closing || time.nanoTime() - readyAt >= 0;
        case STUCK, STALLED -> closing || released;
      };
    }

    @Override
    public boolean isDone() {
      if (done) {
        return true;
      }
      // Iterative, not recursive: a long chain of unobserved handles must not overflow the stack.
      for (FaultyHandle h = this; h != null && !h.done; h = h.previous) {
        if (!h.ownDone()) {
          return false;
        }
      }
      for (FaultyHandle h = this; h != null && !h.done; ) {
        FaultyHandle p = h.previous;
        h.done = true;
        h.previous = null;
        live.remove(h);
        h = p;
      }
      return true;
    }

    @Override
    public long sequence() {
      return raw.sequence();
    }

    @Override
    public TransferBatch batch() {
      return raw.batch();
    }

    @Override
    public Optional<Throwable> failure() {
      if (!isDone()) {
        return Optional.empty();
      }
      return injected != null ? Optional.of(injected) : raw.failure();
    }

    @Override
    public void await() throws InterruptedException {
      while (!isDone()) {
        pause();
      }
      throwIfFailed();
    }

    @Override
    public boolean await(Duration timeout) throws InterruptedException {
      long deadline = time.nanoTime() + timeout.toNanos();
      while (!isDone()) {
        if (time.nanoTime() - deadline >= 0) {
          return false;
        }
        pause();
      }
      throwIfFailed();
      return true;
    }

    private void throwIfFailed() {
      Optional<Throwable> failure = failure();
      if (failure.isPresent()) {
        throw failure.get() instanceof TransferFailedException tfe
            ? tfe
            : new TransferFailedException(
                raw.batch().direction() + " seq " + raw.sequence() + " failed", failure.get());
      }
    }

    @Override
    public String toString() {
      return "FaultyHandle["
          + raw.batch().direction()
          + " seq "
          + raw.sequence()
          + ", "
          + fault
          + (done ? ", done" : "")
          + "]";
    }
  }
}
