package io.kvtier.collective.mpi.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The process-wide gate of every MPI call sequence: lets one thread at a time in (MPI is
 * initialized with {@code MPI_THREAD_SERIALIZED}, or only the initializing thread under {@code
 * FUNNELED}), and keeps what the watchdog and the exit hook report: whether a call is in
 * progress, which one, and the recent calls.
 *
 * <p>The state is one counter, even when idle and odd inside a call, so that the watchdog tells
 * "still the same call" from "another call" by the value alone. Entering is a load, a check, four
 * array stores and a release store; leaving a release store. Two costs were measured and removed
 * (2 ranks, 1-value all-reduce of about 0.45 us): an atomic compare-and-set on entry (+90 ns: a
 * locked instruction just after an MPI call waits until MPI's last stores to the shared-memory
 * queues have drained), and a call record allocated per call (+50 ns at the first quartile). So
 * calls are kept as primitive fields in a ring and turned into {@link MpiCall} records only for
 * the diagnostics. The price of the first: the check catches a second thread that calls while
 * another is inside MPI, but two threads entering at the very same instant may both pass. It
 * checks the caller's contract (calls are serialized); it is not what serializes them.
 *
 * <p>The ring is written by the calling thread and read by the watchdog without a lock: a racy
 * read can only blur a diagnostic line, never a decision.
 */
final class MpiCallGate {

  /** How many recent calls the diagnostics show. */
  static final int HISTORY = 8;

  private final AtomicLong state = new AtomicLong();
  private final MpiCall.Kind[] kinds = new MpiCall.Kind[HISTORY];
  private final int[] arguments = new int[HISTORY];
  private final String[] tags = new String[HISTORY];
  private final long[] sequences = new long[HISTORY];
  private final Thread onlyThread;
  private long recorded;

  /** The token of a call the watchdog leaves alone (an idle wait), or -1. */
  private volatile long untimedToken = -1;

  /**
   * Creates a gate.
   *
   * @param onlyThread the one thread allowed to call ({@code MPI_THREAD_FUNNELED}), or null when
   *     any thread may call, one at a time
   */
  MpiCallGate(Thread onlyThread) {
    this.onlyThread = onlyThread;
  }

  /**
   * Enters a call.
   *
   * @param kind the operation
   * @param argument its array length or root, else 0
   * @param tag the call site
   * @param sequence the call's sequence number
   * @return the token to pass to {@link #exit(long)}
   * @throws IllegalStateException if another thread is inside a call (see the class comment for
   *     the limit of this check), or under FUNNELED if this is not the thread that initialized MPI
   */
  long enter(MpiCall.Kind kind, int argument, String tag, long sequence) {
    if (onlyThread != null && Thread.currentThread() != onlyThread) {
      throw new IllegalStateException(
          "Open MPI provided only MPI_THREAD_FUNNELED, so only the"
              + " thread that joined ("
              + onlyThread.getName()
              + ") may call the mpi collective; "
              + Thread.currentThread().getName()
              + " called "
              + new MpiCall(kind, argument, tag, sequence).describe());
    }
    long s = state.getAcquire();
    if ((s & 1) != 0) {
      throw new IllegalStateException(
          "another thread is inside an MPI call ("
              + current()
              + ") while "
              + Thread.currentThread().getName()
              + " calls "
              + new MpiCall(kind, argument, tag, sequence).describe()
              + ": a rank's collective calls must come from one thread at a time");
    }
    record(kind, argument, tag, sequence);
    state.setRelease(s + 1);
    return s + 1;
  }

  /**
   * Enters a call described by a record; for the cold paths (join, tests).
   *
   * @param call the call
   * @return the token to pass to {@link #exit(long)}
   */
  long enter(MpiCall call) {
    Objects.requireNonNull(call, "call");
    return enter(call.kind(), call.argument(), call.tag(), call.sequence());
  }

  private void record(MpiCall.Kind kind, int argument, String tag, long sequence) {
    int slot = (int) (recorded & (HISTORY - 1));
    kinds[slot] = kind;
    arguments[slot] = argument;
    tags[slot] = tag;
    sequences[slot] = sequence;
    recorded++;
  }

  /**
   * Enters for good, to finalize MPI: succeeds only when no thread is inside a call, and then no
   * thread can enter again. Ignores the FUNNELED thread rule, because the exit hook runs on its
   * own thread and finalizing is the last thing this process does with MPI.
   *
   * @param call the finalize call, for the diagnostics of a thread that tries to enter later
   * @return whether the gate is now closed for good
   */
  boolean enterForever(MpiCall call) {
    long s = state.get();
    if ((s & 1) != 0 || !state.compareAndSet(s, s + 1)) {
      return false;
    }
    record(call.kind(), call.argument(), call.tag(), call.sequence());
    return true;
  }

  /**
   * Leaves the call entered with {@code token}.
   *
   * @param token what {@link #enter} returned
   */
  void exit(long token) {
    state.setRelease(token + 1);
  }

  /**
   * Marks the call entered with {@code token} as one the watchdog does not time: a rank waiting
   * for work ({@link io.kvtier.spi.Collective#awaitBroadcast}). It ends with the call.
   *
   * @param token what {@link #enter} returned
   */
  void untimed(long token) {
    untimedToken = token;
  }

  /**
   * Whether the call of a state is untimed.
   *
   * @param state a value of {@link #state()}
   * @return true if a call is in progress in that state and the watchdog must leave it alone
   */
  boolean isUntimed(long state) {
    return (state & 1) != 0 && state == untimedToken;
  }

  /**
   * The state counter: odd while a call is in progress; a new value for every call.
   *
   * @return the counter
   */
  long state() {
    return state.get();
  }

  /**
   * Whether a thread is inside an MPI call now.
   *
   * @return true while a call is in progress
   */
  boolean inCall() {
    return (state.get() & 1) != 0;
  }

  /**
   * The call in progress, or the last one.
   *
   * @return the call, or null before the first
   */
  MpiCall current() {
    long end = recorded;
    return end == 0 ? null : call((int) ((end - 1) & (HISTORY - 1)));
  }

  /**
   * The recent calls, oldest first.
   *
   * @return up to {@link #HISTORY} calls
   */
  List<MpiCall> recent() {
    List<MpiCall> calls = new ArrayList<>(HISTORY);
    long end = recorded;
    for (long i = Math.max(0, end - HISTORY); i < end; i++) {
      MpiCall call = call((int) (i & (HISTORY - 1)));
      if (call != null) {
        calls.add(call);
      }
    }
    return calls;
  }

  private MpiCall call(int slot) {
    MpiCall.Kind kind = kinds[slot];
    String tag = tags[slot];
    return kind == null || tag == null
        ? null
        : new MpiCall(kind, arguments[slot], tag, sequences[slot]);
  }

  /**
   * The recent calls as one line.
   *
   * @return descriptions separated by {@code " | "}, oldest first
   */
  String describeRecent() {
    List<String> lines = new ArrayList<>();
    for (MpiCall call : recent()) {
      lines.add(call.describe());
    }
    return lines.isEmpty() ? "(none)" : String.join(" | ", lines);
  }
}
