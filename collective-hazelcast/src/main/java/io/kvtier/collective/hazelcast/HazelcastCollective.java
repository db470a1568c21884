package io.kvtier.collective.hazelcast;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One rank's handle on a {@link HazelcastGroup}. Each call is one round of the group's protocol,
 * run on a helper thread so that the rank's thread can enforce the watchdog even when a
 * Hazelcast call blocks (a CP group without majority blocks, it does not fail).
 *
 * <p>Failures: ranks whose calls differ throw {@link CollectiveDesyncException} on every rank
 * (every rank reads the same contributions, so every rank builds the same message); a round not
 * complete within the watchdog throws {@link CollectiveTimeoutException} naming the missing
 * ranks and their last published calls, and marks the group broken in the cluster so that a
 * late rank fails too; a peer that closed or whose process died fails the round as soon as the
 * {@link HazelcastGroupWatch} sees it. A round that fails returns nothing, so the caller never
 * acts on a half-finished round.
 */
final class HazelcastCollective implements Collective {
  private static final System.Logger LOG = System.getLogger(HazelcastCollective.class.getName());

  /** How often a waiting rank looks at the watch. */
  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /** Bound on each best-effort cluster call while the group is whole (closing, a timeout's read). */
  private static final long CLEANUP_MILLIS = 2_000;

  /**
   * Bound on all best-effort cluster calls together once the group broke (see {@link #bounded}):
   * on a whole cluster they take milliseconds; on one that lost a member they wait for it.
   */
  private static final long FAILURE_CLEANUP_MILLIS = 1_000;

  /**
   * How a timeout's message starts; the group's broken mark repeats the message, so that a rank
   * still waiting in the same round learns it was a timeout too ({@link HazelcastGroupWatch}).
   */
  static final String TIMEOUT_PREFIX = "collective timeout: ";

  private final HazelcastGroup group;
  private final HazelcastGroupWatch watch;
  private final int rank;
  private final int size;
  private final Duration watchdog;
  private final ExecutorService helpers;
  private final Release release;

  /** What closing a handle does with the process's Hazelcast instance. */
  @FunctionalInterface
  interface Release {
    /**
     * Drops the handle's reference to the instance.
     *
     * @param broken whether the group broke (a rank failed or was lost): the instance then
     *     need not leave the cluster gracefully, which for a CP member of a group that just lost
     *     another means waiting for Raft (about 15 s), while the process is ending with an error
     */
    void close(boolean broken);
  }

  private long sequence;
  private String lastCall = "none";
  private String broken;
  private boolean closed;

  /**
   * The time left for the best-effort cluster calls after the group broke (mark it broken, stop
   * the watch, leave), all of them together; null while the group is whole.
   */
  private CleanupBudget afterFailure;

  HazelcastCollective(
      HazelcastGroup group,
      int rank,
      int size,
      Duration watchdog,
      ExecutorService helpers,
      Release release) {
    this.group = group;
    this.rank = rank;
    this.size = size;
    this.watchdog = watchdog;
    this.helpers = helpers;
    this.release = release;
    this.watch = HazelcastGroupWatch.start(group, rank, size);
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public long[] allReduce(ReduceOp op, long[] values, String tag) {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(values, "values");
    Objects.requireNonNull(tag, "tag");
    HazelcastContribution[] all =
        round(HazelcastCall.allReduce(op, values.length, tag), values.clone(), Optional.empty());
    long[] reduced = all[0].values().clone();
    for (int r = 1; r < size; r++) {
      long[] v = all[r].values();
      for (int i = 0; i < reduced.length; i++) {
        reduced[i] = op.apply(reduced[i], v[i]);
      }
    }
    return reduced;
  }

  @Override
  public byte[] broadcast(int root, byte[] payload, String tag) {
    return broadcast(root, payload, tag, false);
  }

  /**
   * The broadcast with no watchdog: a round that waits until the root publishes, however long.
   * The wait ends early as any round's does: when the {@link HazelcastGroupWatch} sees a rank
   * gone (its member left the cluster: {@link io.kvtier.spi.CollectiveRankLostException}), a
   * handle closed, or the group broken. While it waits the rank has one latch await outstanding
   * and makes no other cluster call.
   */
  @Override
  public byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    return broadcast(root, payload, tag, true);
  }

  private byte[] broadcast(int root, byte[] payload, String tag, boolean untimed) {
    Objects.requireNonNull(tag, "tag");
    if (root < 0 || root >= size) {
      throw new IllegalArgumentException(
          "root=" + root + " must be a rank in [0, " + size + ") of group '" + group.name() + "'");
    }
    if (root == rank) {
      Objects.requireNonNull(payload, "payload must not be null on the root rank");
    }
    Optional<byte[]> mine = root == rank ? Optional.of(payload) : Optional.empty();
    HazelcastContribution[] all =
        round(HazelcastCall.broadcast(root, tag), new long[0], mine, untimed);
    // decoded from the map, so every rank, the root included, gets its own copy
    return all[root]
        .payload()
        .orElseThrow(
            () ->
                new CollectiveException(
                    "rank "
                        + rank
                        + ": the root "
                        + root
                        + " of broadcast tag '"
                        + tag
                        + "' published no"
                        + " payload",
                    null));
  }

  @Override
  public void barrier(String tag) {
    Objects.requireNonNull(tag, "tag");
    round(HazelcastCall.barrier(tag), new long[0], Optional.empty());
  }

  private HazelcastContribution[] round(
      HazelcastCall call, long[] values, Optional<byte[]> payload) {
    return round(call, values, payload, false);
  }

  /** One round; {@code untimed}: no watchdog, only the watch ends the wait early. */
  private HazelcastContribution[] round(
      HazelcastCall call, long[] values, Optional<byte[]> payload, boolean untimed) {
    if (closed) {
      throw new IllegalStateException(
          "rank "
              + rank
              + " of group '"
              + group.name()
              + "' is closed; "
              + call.describe()
              + " refused");
    }
    if (broken != null) {
      throw new CollectiveException(
          "rank "
              + rank
              + ": group '"
              + group.name()
              + "' is broken ("
              + broken
              + "); "
              + call.describe()
              + " refused",
          null);
    }
    long seq = sequence++;
    lastCall = call.describe() + " seq " + seq;
    HazelcastContribution mine = new HazelcastContribution(seq, rank, call, values, payload);
    long watchdogNanos = untimed ? Long.MAX_VALUE / 2 : saturatedNanos(watchdog);
    long deadline = System.nanoTime() + watchdogNanos;
    Future<HazelcastContribution[]> exchange = group.exchange(mine, watchdogNanos);
    try {
      while (true) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw fail(timeout(call, seq));
        }
        try {
          HazelcastContribution[] all =
              exchange.get(Math.min(left, POLL_NANOS), TimeUnit.NANOSECONDS);
          if (all == null) {
            throw fail(timeout(call, seq));
          }
          return agree(all, seq);
        } catch (TimeoutException e) {
          Optional<CollectiveException> failure = watch.failure(seq, call.describe());
          if (failure.isPresent()) {
            throw fail(failure.get());
          }
        }
      }
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof HazelcastGroup.GroupBrokenException) {
        throw fail(
            new CollectiveException(
                "rank "
                    + rank
                    + " completed "
                    + call.describe()
                    + " seq "
                    + seq
                    + " of group '"
                    + group.name()
                    + "' but the group was broken before: "
                    + cause.getMessage(),
                null));
      }
      throw fail(
          new CollectiveException(
              "rank "
                  + rank
                  + ": Hazelcast failed during "
                  + call.describe()
                  + " seq "
                  + seq
                  + " of group '"
                  + group.name()
                  + "': "
                  + cause,
              cause));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw fail(
          new CollectiveException(
              "rank " + rank + " was interrupted in " + call.describe() + " seq " + seq, e));
    } finally {
      if (!exchange.isDone()) {
        exchange.cancel(true);
      }
    }
  }

  /** Checks that every rank made the same call; every rank throws the same desync message. */
  private HazelcastContribution[] agree(HazelcastContribution[] all, long seq) {
    for (HazelcastContribution c : all) {
      if (!c.call().equals(all[0].call())) {
        StringBuilder message =
            new StringBuilder("collective desync in group '")
                .append(group.name())
                .append("' at seq ")
                .append(seq)
                .append(": ranks called different collectives:");
        for (HazelcastContribution each : all) {
          message
              .append("\n  rank ")
              .append(each.rank())
              .append(": ")
              .append(each.call().describe())
              .append(" seq ")
              .append(each.sequence());
        }
        broken = "desync at seq " + seq;
        throw new CollectiveDesyncException(message.toString());
      }
    }
    return all;
  }

  /** The timeout's message: who is missing, and what everyone last published. */
  private CollectiveTimeoutException timeout(HazelcastCall call, long seq) {
    HazelcastContribution[] last = lastPublished(seq);
    StringBuilder missing = new StringBuilder();
    StringBuilder arrived = new StringBuilder();
    for (int r = 0; r < size; r++) {
      if (last[r] != null && last[r].sequence() == seq) {
        arrived
            .append(arrived.isEmpty() ? "" : ", ")
            .append(r)
            .append(" (")
            .append(last[r].call().describe())
            .append(")");
      } else {
        missing
            .append(missing.isEmpty() ? "" : ", ")
            .append(r)
            .append(" (last published: ")
            .append(
                last[r] == null
                    ? "nothing readable"
                    : last[r].call().describe() + " seq " + last[r].sequence())
            .append(")");
      }
    }
    String who =
        missing.isEmpty()
            ? "every rank published seq "
                + seq
                + " but the CP subsystem did not confirm the round:"
                + " has the CP group lost its majority (fewer than 2 of 3 CP members alive)?"
            : "missing ranks: " + missing;
    return new CollectiveTimeoutException(
        TIMEOUT_PREFIX
            + "rank "
            + rank
            + " of group '"
            + group.name()
            + "' ("
            + size
            + " ranks, incarnation "
            + group.incarnation()
            + ") waited "
            + watchdog
            + " in "
            + call.describe()
            + " seq "
            + seq
            + "; "
            + who
            + "; arrived: "
            + (arrived.isEmpty() ? "none" : arrived)
            + ". A missing rank is stuck, dead or on"
            + " another code path; raise the watchdog if the ranks are only slow");
  }

  /** Each rank's latest contribution at or before {@code seq}; null where unreadable in time. */
  private HazelcastContribution[] lastPublished(long seq) {
    List<Future<HazelcastContribution>> reads = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      int each = r;
      reads.add(helpers.submit(() -> group.lastPublished(seq, each)));
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLEANUP_MILLIS);
    HazelcastContribution[] last = new HazelcastContribution[size];
    for (int r = 0; r < size; r++) {
      try {
        last[r] = reads.get(r).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      } catch (ExecutionException | TimeoutException e) {
        reads.get(r).cancel(true);
      }
    }
    return last;
  }

  /** Breaks the group here and, best effort, in the cluster, then hands back the failure. */
  private CollectiveException fail(CollectiveException failure) {
    if (broken == null) {
      // Logged when found: closing the member afterwards may take a while (a CP member leaving
      // a group that just lost another waits for Raft), and the cause is news before that.
      LOG.log(System.Logger.Level.WARNING, failure.getMessage());
      broken = failure.getMessage().lines().findFirst().orElse("failed");
      afterFailure = CleanupBudget.start(FAILURE_CLEANUP_MILLIS);
      String reason = "rank " + rank + " failed: " + failure.getMessage();
      bounded(() -> group.markBroken(reason));
    }
    return failure;
  }

  /**
   * Runs a best-effort cluster call on a helper thread and waits for it with a bound: {@link
   * #CLEANUP_MILLIS} while the group is whole, else what is left of the one budget ({@link
   * #FAILURE_CLEANUP_MILLIS}) all calls after the failure share. A cluster that just lost a
   * member holds calls on its partitions until it has reassigned them, and a CP group without
   * majority holds them for good: three calls of 2 s each kept a survivor of a {@code kill -9}
   * alive up to 6 s after it had named the dead rank.
   */
  private void bounded(Runnable clusterCall) {
    long waitNanos =
        afterFailure == null
            ? TimeUnit.MILLISECONDS.toNanos(CLEANUP_MILLIS)
            : afterFailure.remainingNanos();
    if (waitNanos <= 0) {
      return; // the budget is spent: the process is ending with the failure already named
    }
    try {
      helpers.submit(clusterCall).get(waitNanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // best effort: the cluster may be the thing that failed
    }
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 2;
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      bounded(watch::stop);
      bounded(() -> group.leave(rank, sequence, lastCall));
    } finally {
      helpers.shutdownNow();
      release.close(broken != null);
    }
  }

  @Override
  public String toString() {
    return "HazelcastCollective[group="
        + group.name()
        + ", rank="
        + rank
        + "/"
        + size
        + ", seq="
        + sequence
        + (broken == null ? "" : ", broken")
        + "]";
  }
}
