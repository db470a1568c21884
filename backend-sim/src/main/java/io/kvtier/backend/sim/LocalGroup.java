package io.kvtier.backend.sim;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveRankLostException;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@code local} rank group: ranks are threads that meet in rounds, one round per sequence
 * number. Every call records the rank's {@link LocalCall}; the round completes when all ranks
 * have arrived with equal calls, and breaks the group as soon as two arrived calls differ (a
 * desync), when a waiter's watchdog expires, when a rank leaves, or when a waiter is
 * interrupted. A broken group fails every waiter and every later call at once.
 *
 * <p>The watchdog reads {@link System#nanoTime()}, never the backend's time source: a virtual
 * clock may stand still while ranks are blocked here. Waiting uses one lock and condition per
 * group; nothing spins.
 */
final class LocalGroup {

  private static final System.Logger LOG = System.getLogger(LocalGroup.class.getName());
  private static final int HISTORY = 4;
  private static final Map<String, LocalGroup> REGISTRY = new HashMap<>();

  private enum BreakKind {
    DESYNC,
    TIMEOUT,
    LEFT,
    LOST,
    INTERRUPTED
  }

  /** Why the group broke; {@code lostRank} is the rank found gone (LOST), else -1. */
  private record Breakage(BreakKind kind, String message, int lostRank) {
    Breakage(BreakKind kind, String message) {
      this(kind, message, -1);
    }
  }

  /** How often a rank in an unbounded wait looks whether the ranks it waits for still live. */
  private static final long LIVENESS_POLL_NANOS = 50_000_000L;

  /** The calls of one sequence number. */
  private static final class Round {
    final LocalCall[] calls;
    final Object[] data;
    int arrived;
    boolean complete;
    Object result;

    Round(int worldSize) {
      calls = new LocalCall[worldSize];
      data = new Object[worldSize];
    }
  }

  private final String name;
  private final int worldSize;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final boolean[] joined;
  private final boolean[] left;

  /** The thread of each rank's latest call: the {@code local} group's failure detection. */
  private final Thread[] threads;

  private final List<ArrayDeque<LocalCall>> history;
  private int open;
  private Round round;
  private Optional<Breakage> broken = Optional.empty();

  private LocalGroup(String name, int worldSize) {
    this.name = name;
    this.worldSize = worldSize;
    this.joined = new boolean[worldSize];
    this.left = new boolean[worldSize];
    this.threads = new Thread[worldSize];
    this.history = new ArrayList<>(worldSize);
    for (int r = 0; r < worldSize; r++) {
      history.add(new ArrayDeque<>(HISTORY));
    }
    this.round = new Round(worldSize);
  }

  /** Joins the named group, creating it for the first rank. */
  static Collective join(String name, int worldSize, int rank, Duration watchdog) {
    synchronized (REGISTRY) {
      LocalGroup group = REGISTRY.computeIfAbsent(name, n -> new LocalGroup(n, worldSize));
      group.lock.lock();
      try {
        if (group.worldSize != worldSize) {
          throw new IllegalArgumentException(
              "group '"
                  + name
                  + "' exists with worldSize="
                  + group.worldSize
                  + " but rank "
                  + rank
                  + " joins with worldSize="
                  + worldSize
                  + ": every rank of a group must pass the same world size");
        }
        if (group.joined[rank]) {
          throw new IllegalArgumentException(
              "rank "
                  + rank
                  + " has already joined group '"
                  + name
                  + "'"
                  + (group.left[rank] ? " and left it" : "")
                  + ": each rank joins a group once; use a new group name for a new group");
        }
        group.joined[rank] = true;
        group.open++;
      } finally {
        group.lock.unlock();
      }
      return new LocalCollective(group, rank, watchdog);
    }
  }

  String name() {
    return name;
  }

  int worldSize() {
    return worldSize;
  }

  /**
   * One rank's arrival at its next call; blocks until the round completes or the group breaks.
   *
   * @param data the rank's values (all-reduce), the root's payload (broadcast), or null
   * @return the round's result: the reduced array, the root's payload, or null
   */
  Object arrive(int rank, LocalCall call, Object data, long watchdogNanos) {
    return arrive(rank, call, data, watchdogNanos, false);
  }

  /**
   * As {@link #arrive(int, LocalCall, Object, long)}; with {@code watchLiveness} the wait also
   * ends, with {@link CollectiveRankLostException}, when a rank that has not arrived is gone: the
   * thread of its latest call ended without closing its handle. That is what a rank in an
   * unbounded wait ({@link io.kvtier.spi.Collective#awaitBroadcast}) has instead of a watchdog.
   */
  Object arrive(int rank, LocalCall call, Object data, long watchdogNanos, boolean watchLiveness) {
    lock.lock();
    try {
      if (left[rank]) {
        throw new IllegalStateException(
            "rank "
                + rank
                + " of group '"
                + name
                + "' called "
                + call.describe()
                + " after closing its handle: join the group again under a new name");
      }
      if (broken.isPresent()) {
        throw exception(
            broken.get(),
            "rank "
                + rank
                + " called "
                + call.describe()
                + " on broken group '"
                + name
                + "': "
                + broken.get().message());
      }
      remember(rank, call);
      threads[rank] = Thread.currentThread();
      Round r = round;
      r.calls[rank] = call;
      r.data[rank] = data;
      r.arrived++;
      for (LocalCall other : r.calls) {
        if (other != null && !other.equals(call)) {
          return fail(BreakKind.DESYNC, desyncMessage(r));
        }
      }
      if (r.arrived == worldSize) {
        r.result = combine(r);
        r.complete = true;
        round = new Round(worldSize);
        changed.signalAll();
        return r.result;
      }
      long deadline = System.nanoTime() + watchdogNanos;
      while (!r.complete && broken.isEmpty()) {
        long remaining = deadline - System.nanoTime();
        if (remaining <= 0) {
          return fail(BreakKind.TIMEOUT, timeoutMessage(rank, call, r, watchdogNanos));
        }
        if (watchLiveness) {
          int lost = lostRank(r);
          if (lost >= 0) {
            return fail(
                new Breakage(
                    BreakKind.LOST,
                    "rank "
                        + lost
                        + " of group '"
                        + name
                        + "' is gone: its thread "
                        + threads[lost].getName()
                        + " ended without closing its handle while rank "
                        + rank
                        + " waited in "
                        + call.describe()
                        + "; "
                        + lastCalls(),
                    lost));
          }
        }
        try {
          changed.awaitNanos(watchLiveness ? Math.min(remaining, LIVENESS_POLL_NANOS) : remaining);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          fail(
              BreakKind.INTERRUPTED,
              "rank "
                  + rank
                  + " was interrupted while waiting in "
                  + call.describe()
                  + " of group '"
                  + name
                  + "'");
        }
      }
      if (r.complete) {
        return r.result;
      }
      throw exception(broken.get(), broken.get().message());
    } finally {
      lock.unlock();
    }
  }

  /** A rank closes its handle: waiters and later calls fail, naming it. Idempotent. */
  void leave(int rank) {
    boolean last;
    lock.lock();
    try {
      if (left[rank]) {
        return;
      }
      left[rank] = true;
      open--;
      last = open == 0;
      if (broken.isEmpty()) {
        List<Integer> waiting = new ArrayList<>();
        for (int r = 0; r < worldSize; r++) {
          if (round.calls[r] != null) {
            waiting.add(r);
          }
        }
        broken =
            Optional.of(
                new Breakage(
                    BreakKind.LEFT,
                    "rank "
                        + rank
                        + " left group '"
                        + name
                        + "' (closed its handle)"
                        + (waiting.isEmpty()
                            ? ""
                            : " while ranks "
                                + waiting
                                + " wait in "
                                + round.calls[waiting.getFirst()].describe())
                        + "; "
                        + lastCalls()));
        changed.signalAll();
      }
    } finally {
      lock.unlock();
    }
    if (last) {
      synchronized (REGISTRY) {
        lock.lock();
        try {
          // A late join may have reopened the count; only an empty group leaves the registry.
          if (open == 0) {
            REGISTRY.remove(name, this);
          }
        } finally {
          lock.unlock();
        }
      }
    }
  }

  /** The lowest rank not arrived in {@code r} whose latest calling thread ended, or -1. */
  private int lostRank(Round r) {
    for (int other = 0; other < worldSize; other++) {
      Thread t = threads[other];
      if (r.calls[other] == null && !left[other] && t != null && !t.isAlive()) {
        return other;
      }
    }
    return -1;
  }

  /** Breaks the group, wakes every waiter, and throws the caller's exception. */
  private Object fail(BreakKind kind, String message) {
    return fail(new Breakage(kind, message));
  }

  private Object fail(Breakage breakage) {
    LOG.log(System.Logger.Level.WARNING, breakage.message());
    broken = Optional.of(breakage);
    changed.signalAll();
    throw exception(breakage, breakage.message());
  }

  private static CollectiveException exception(Breakage b, String message) {
    return switch (b.kind()) {
      case DESYNC, LEFT -> new CollectiveDesyncException(message);
      case LOST -> new CollectiveRankLostException(b.lostRank(), message);
      case TIMEOUT -> new CollectiveTimeoutException(message);
      case INTERRUPTED -> new CollectiveException(message, null);
    };
  }

  private Object combine(Round r) {
    LocalCall call = r.calls[0];
    return switch (call.kind()) {
      case ALL_REDUCE_MIN -> reduce(ReduceOp.MIN, r.data);
      case ALL_REDUCE_MAX -> reduce(ReduceOp.MAX, r.data);
      case ALL_REDUCE_SUM -> reduce(ReduceOp.SUM, r.data);
      case BROADCAST -> r.data[call.argument()];
      case BARRIER -> null;
    };
  }

  private static long[] reduce(ReduceOp op, Object[] data) {
    long[] acc = ((long[]) data[0]).clone();
    for (int r = 1; r < data.length; r++) {
      long[] values = (long[]) data[r];
      for (int i = 0; i < acc.length; i++) {
        acc[i] = op.apply(acc[i], values[i]);
      }
    }
    return acc;
  }

  private void remember(int rank, LocalCall call) {
    ArrayDeque<LocalCall> calls = history.get(rank);
    if (calls.size() == HISTORY) {
      calls.removeFirst();
    }
    calls.addLast(call);
  }

  private String desyncMessage(Round r) {
    StringBuilder sb =
        new StringBuilder("collective desync in group '")
            .append(name)
            .append("' (worldSize=")
            .append(worldSize)
            .append("): ranks called different operations" + " at the same sequence number:");
    for (int rank = 0; rank < worldSize; rank++) {
      sb.append("\n  rank ").append(rank).append(": ");
      sb.append(r.calls[rank] == null ? "not arrived yet" : r.calls[rank].describe());
    }
    return sb.append(
            "\nEvery rank must take the same collective decisions; look for a branch"
                + " that reads rank-local state before a collective.")
        .toString();
  }

  private String timeoutMessage(int rank, LocalCall call, Round r, long watchdogNanos) {
    List<Integer> missing = new ArrayList<>();
    for (int other = 0; other < worldSize; other++) {
      if (r.calls[other] == null) {
        missing.add(other);
      }
    }
    return "collective timeout in group '"
        + name
        + "': rank "
        + rank
        + " waited "
        + Duration.ofNanos(watchdogNanos)
        + " (the watchdog) in "
        + call.describe()
        + "; ranks not arrived: "
        + missing
        + "; "
        + lastCalls();
  }

  private String lastCalls() {
    StringBuilder sb = new StringBuilder("last calls per rank (oldest first):");
    for (int rank = 0; rank < worldSize; rank++) {
      sb.append("\n  rank ").append(rank).append(": ");
      if (!joined[rank]) {
        sb.append("never joined");
        continue;
      }
      ArrayDeque<LocalCall> calls = history.get(rank);
      if (calls.isEmpty()) {
        sb.append("no call yet");
      }
      String sep = "";
      for (LocalCall c : calls) {
        sb.append(sep).append(c.describe());
        sep = ", ";
      }
      if (round.calls[rank] != null) {
        sb.append(" (waiting)");
      }
      if (left[rank]) {
        sb.append(" (left)");
      }
    }
    return sb.toString();
  }
}
