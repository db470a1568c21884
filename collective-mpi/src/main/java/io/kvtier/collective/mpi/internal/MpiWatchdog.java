package io.kvtier.collective.mpi.internal;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Turns an MPI call that never returns into a loud failure. An MPI collective blocks inside the C
 * library until every rank has arrived, and nothing in Java can interrupt it; a rank that never
 * arrives (stuck, dead, or on another code path the guard frame could not see) would leave the
 * others blocked forever. This thread watches the {@link MpiCallGate}: when one call has been in
 * progress for longer than the timeout, it hands a message naming the call and this rank's recent
 * calls to its action, which by default prints it and ends the whole MPI job ({@link
 * MpiRuntime#abortJob}). It fires at most once.
 *
 * <p>It polls at an eighth of the timeout (between 1 ms and 250 ms), so a stuck call is reported
 * between one and 1.125 timeouts after it began; the calling thread pays nothing for it beyond
 * the gate's counter. An idle wait ({@link MpiCallGate#untimed}) is not timed: when a process
 * of the job dies, {@code mpirun} ends the others.
 */
final class MpiWatchdog implements AutoCloseable {

  private final MpiCallGate gate;
  private final long timeoutNanos;
  private final String rankDescription;
  private final Consumer<String> action;
  private final Thread thread;
  private volatile boolean closed;

  /**
   * Starts a watchdog.
   *
   * @param gate the calls to watch
   * @param timeout how long one call may take
   * @param rankDescription who is waiting, for example {@code rank 1 of 4 in group 'g'}
   * @param action what to do with the message when a call takes too long
   */
  MpiWatchdog(MpiCallGate gate, Duration timeout, String rankDescription, Consumer<String> action) {
    this.gate = Objects.requireNonNull(gate, "gate");
    Objects.requireNonNull(timeout, "timeout");
    this.rankDescription = Objects.requireNonNull(rankDescription, "rankDescription");
    this.action = Objects.requireNonNull(action, "action");
    long nanos;
    try {
      nanos = timeout.toNanos();
    } catch (ArithmeticException e) {
      nanos = Long.MAX_VALUE;
    }
    this.timeoutNanos = nanos;
    long poll =
        Math.clamp(nanos / 8, TimeUnit.MILLISECONDS.toNanos(1), TimeUnit.MILLISECONDS.toNanos(250));
    this.thread =
        Thread.ofPlatform().daemon().name("kvtier-mpi-watchdog").unstarted(() -> watch(poll));
    thread.start();
  }

  private void watch(long pollNanos) {
    long watched = -1;
    long since = 0;
    while (!closed) {
      try {
        TimeUnit.NANOSECONDS.sleep(pollNanos);
      } catch (InterruptedException e) {
        return;
      }
      long s = gate.state();
      if ((s & 1) == 0 || gate.isUntimed(s)) {
        watched = -1;
      } else if (s != watched) {
        watched = s;
        since = System.nanoTime();
      } else if (System.nanoTime() - since >= timeoutNanos && !closed) {
        action.accept(message());
        return;
      }
    }
  }

  private String message() {
    return "kvtier mpi watchdog: "
        + rankDescription
        + " has waited more than "
        + Duration.ofNanos(timeoutNanos)
        + " in "
        + gate.current()
        + ", which not every rank reached (a rank is stuck, has died, or took another code path"
        + " before this call); recent calls of this rank, oldest first: "
        + gate.describeRecent()
        + ". MPI cannot cancel a blocked collective, so the job is ended: each rank prints its"
        + " recent calls as it terminates, and the rank whose calls stop before this sequence"
        + " number is the one that did not arrive.";
  }

  /** Stops watching; idempotent. A call in progress is no longer timed. */
  @Override
  public void close() {
    closed = true;
    thread.interrupt();
  }
}
