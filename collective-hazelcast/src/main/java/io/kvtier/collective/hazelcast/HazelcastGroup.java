package io.kvtier.collective.hazelcast;

import com.hazelcast.core.EntryEvent;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.cp.CPSubsystem;
import com.hazelcast.cp.IAtomicLong;
import com.hazelcast.cp.ICountDownLatch;
import com.hazelcast.map.IMap;
import com.hazelcast.map.listener.EntryAddedListener;
import com.hazelcast.map.listener.EntryUpdatedListener;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The cluster objects of one incarnation of a rank group, and the round protocol on them.
 *
 * <p>Round {@code s}: each rank writes its {@link HazelcastContribution} to the group's data map
 * ({@code IMap}, off the Raft log: a broadcast payload may be tens of KB), then counts down the
 * CP latch of the round and awaits it. The latch reaching zero is the agreement, linearizable
 * through Raft, that every rank has published; each rank then checks and reduces all
 * contributions locally.
 *
 * <p>The round's latency is what these steps cost one after the other, so a round makes as few
 * sequential cluster calls as the agreement allows. The await goes out with the write (it may
 * reach the CP group first: it waits for zero either way); the count-down follows the write and
 * is one Raft call on a member ({@link HazelcastLatchArrival}: the proxy's {@code countDown()}
 * first queries the latch's round, which this protocol knows); nothing more is read when the
 * other contributions already arrived. They arrive through an entry listener on the data map,
 * which receives every write with its value, usually before the latch opens; a contribution not
 * yet received then is read with {@code getAll}, as is the broken marker.
 *
 * <p>Nothing grows with the number of rounds: round {@code s} uses latch and map slot {@code s %
 * 3}. A rank at round {@code s} has finished round {@code s - 1}, so every rank has published
 * {@code s - 1}, which each did only after it finished round {@code s - 2} (its await
 * included); hence the slot of {@code s - 2}, which is the slot of {@code s + 1}, is free for
 * reuse. Each rank, entering round {@code s}, re-arms the latch of round {@code s + 1} with
 * {@code trySetCount} in the background (off the round's path), and waits for that call before
 * it counts down or awaits in round {@code s + 1}. {@code trySetCount} does nothing while the
 * count is above zero, so the first rank's call arms the latch and the others' do nothing; the
 * count cannot reach zero before every rank's call returned, since each rank calls before it
 * counts down. Round 0 arms its own latch first. So each use of a latch is armed exactly once,
 * and round {@code s} is the latch's round {@code s / 3 + 1} ({@link #latchRound}).
 *
 * <p>Incarnations: ranks joining a group name draw tickets from a CP counter; tickets {@code
 * [k * size, (k + 1) * size)} form incarnation {@code k}, whose objects carry {@code k} in their
 * names. A restarted run with the same group name so never meets the state of an earlier run.
 * The last rank of an incarnation to close destroys its objects.
 */
final class HazelcastGroup {

  /** Slots (latches and map slots) reused round-robin. */
  static final int RING = 3;

  /** Data map key of the marker a rank writes when it breaks the group (timeout, error). */
  static final String BROKEN = "broken";

  private final HazelcastInstance hazelcast;
  private final String name;
  private final int size;
  private final long incarnation;
  private final IMap<String, byte[]> data;
  private final IMap<String, String> control;
  private final ICountDownLatch[] latches = new ICountDownLatch[RING];
  private final IAtomicLong closed;

  /** Runs the calls a round makes besides the exchanging thread's own: awaits, re-arms. */
  private final ExecutorService helpers;

  /** The latest contribution received per slot and rank ({@code slot * size + rank}). */
  private final AtomicReferenceArray<HazelcastContribution> received;

  private final HazelcastLatchArrival arrival;

  /** The broken marker, as received from the data map. */
  private volatile String brokenSeen;

  private UUID dataListener;

  /** This rank's re-arm of the latch of round {@code armedSequence}, or null. */
  private CompletableFuture<Boolean> arming;

  private long armedSequence = -1;

  private HazelcastGroup(
      HazelcastInstance hazelcast,
      String name,
      int size,
      long incarnation,
      ExecutorService helpers) {
    this.hazelcast = hazelcast;
    this.name = name;
    this.size = size;
    this.incarnation = incarnation;
    this.helpers = helpers;
    this.received = new AtomicReferenceArray<>(RING * size);
    this.arrival = HazelcastLatchArrival.of(hazelcast);
    String prefix = "kvtier.collective." + name + "." + incarnation;
    CPSubsystem cp = hazelcast.getCPSubsystem();
    this.data = hazelcast.getMap(prefix + ".data");
    this.control = hazelcast.getMap(prefix + ".control");
    for (int i = 0; i < RING; i++) {
      latches[i] = cp.getCountDownLatch(prefix + ".round-" + i);
    }
    this.closed = cp.getAtomicLong(prefix + ".closed");
  }

  /**
   * Joins the current incarnation of a group and registers this rank in it.
   *
   * @param hazelcast the member or client
   * @param name the group name, without {@code '@'}
   * @param size the number of ranks
   * @param rank this rank
   * @param who how other ranks name this rank's process (member UUID and address)
   * @param helpers threads for the calls a round runs beside the exchanging thread
   * @return the group
   * @throws IllegalArgumentException if the incarnation has another size, or the rank already
   *     joined it
   */
  static HazelcastGroup join(
      HazelcastInstance hazelcast,
      String name,
      int size,
      int rank,
      String who,
      ExecutorService helpers) {
    long ticket =
        hazelcast
            .getCPSubsystem()
            .getAtomicLong("kvtier.collective." + name + ".tickets")
            .getAndIncrement();
    HazelcastGroup group = new HazelcastGroup(hazelcast, name, size, ticket / size, helpers);
    // a contribution written before this registration (a faster rank's round 0) reaches this
    // rank through the getAll fallback instead
    group.dataListener = group.data.addEntryListener(group.new DataListener(), true);
    String sizeBefore = group.control.putIfAbsent("size", Integer.toString(size));
    if (sizeBefore != null && !sizeBefore.equals(Integer.toString(size))) {
      throw new IllegalArgumentException(
          "group '"
              + name
              + "' incarnation "
              + group.incarnation
              + " has "
              + sizeBefore
              + " ranks but rank "
              + rank
              + " joins with worldSize="
              + size
              + ": every rank must"
              + " pass the same world size");
    }
    String before = group.control.putIfAbsent(rankKey(rank), who);
    if (before != null) {
      throw new IllegalArgumentException(
          "rank "
              + rank
              + " of group '"
              + name
              + "' incarnation "
              + group.incarnation
              + " was already joined by "
              + before
              + ": each rank joins once; if an earlier run"
              + " of this group died while joining, use a new group name");
    }
    return group;
  }

  /**
   * Starts a round: publishes this rank's contribution and arrives at the round's latch on one
   * helper thread, awaits the latch on another, and completes when the latch opens, with every
   * contribution. Returns at once; the caller waits on the future and enforces its watchdog.
   *
   * <p>The await does not wait for this rank's own write: it may reach the CP group first, and
   * the latch opens only after every rank, this one included, wrote and counted down. Both
   * calls wait for this rank's arming of the latch (normally done during the previous round).
   *
   * @param mine this rank's contribution
   * @param timeoutNanos how long to wait for the other ranks
   * @return the contributions by rank, or null if the wait timed out; fails with {@link
   *     GroupBrokenException} if another rank broke the group, with {@link
   *     IllegalStateException} if a contribution is missing although the round completed, or
   *     with Hazelcast's exception
   */
  CompletableFuture<HazelcastContribution[]> exchange(
      HazelcastContribution mine, long timeoutNanos) {
    long deadline = System.nanoTime() + timeoutNanos;
    long seq = mine.sequence();
    byte[] bytes = mine.encode();
    ICountDownLatch latch = latches[slot(seq)];
    CompletableFuture<Boolean> armed =
        arming != null && armedSequence == seq
            ? arming
            : CompletableFuture.supplyAsync(() -> latch.trySetCount(size), helpers);
    // round seq - 1 is complete, so the slot of seq + 1 is free: re-arm it meanwhile
    ICountDownLatch next = latches[slot(seq + 1)];
    arming = CompletableFuture.supplyAsync(() -> next.trySetCount(size), helpers);
    armedSequence = seq + 1;

    CompletableFuture<HazelcastContribution[]> result = new CompletableFuture<>();
    CompletableFuture.runAsync(
            () -> {
              data.set(contributionKey(seq, mine.rank()), bytes);
              if (waitFor(armed, deadline)) {
                arrival.countDown(latch, latchRound(seq));
              } // else the await times out too, and the caller reports the timeout
            },
            helpers)
        .whenComplete(
            (done, failure) -> {
              if (failure != null) {
                result.completeExceptionally(cause(failure));
              }
            });
    armed
        .thenApplyAsync(
            ignored -> {
              try {
                return latch.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CompletionException(e);
              }
            },
            helpers)
        .whenComplete(
            (opened, failure) -> {
              if (failure != null) {
                result.completeExceptionally(cause(failure));
              } else if (!opened) {
                result.complete(null);
              } else {
                try {
                  result.complete(contributions(seq, mine.rank(), bytes));
                } catch (RuntimeException e) {
                  result.completeExceptionally(e);
                }
              }
            });
    return result;
  }

  /** Whether a future completed before the deadline; its failure is rethrown. */
  private static boolean waitFor(CompletableFuture<?> future, long deadline) {
    try {
      future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CompletionException(e);
    } catch (ExecutionException e) {
      throw new CompletionException(e.getCause());
    }
  }

  private static Throwable cause(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }

  /**
   * Every contribution of a completed round: this rank's own decoded from its bytes (so that a
   * broadcast's root gets a copy of its payload), the others' as the listener received them, or
   * read from the map when not received yet.
   */
  private HazelcastContribution[] contributions(long seq, int rank, byte[] own) {
    HazelcastContribution[] all = new HazelcastContribution[size];
    Set<String> missing = new LinkedHashSet<>();
    for (int r = 0; r < size; r++) {
      HazelcastContribution c =
          r == rank ? HazelcastContribution.decode(own) : received.get(slot(seq) * size + r);
      if (c != null && c.sequence() == seq) {
        all[r] = c;
      } else {
        missing.add(contributionKey(seq, r));
      }
    }
    String broken = brokenSeen;
    if (broken != null) {
      throw new GroupBrokenException(broken);
    }
    if (!missing.isEmpty()) {
      readMissing(seq, missing, all);
    }
    return all;
  }

  /** Reads the contributions the listener has not received yet, and the broken marker. */
  private void readMissing(long seq, Set<String> missing, HazelcastContribution[] all) {
    Set<String> keys = new LinkedHashSet<>(missing);
    keys.add(BROKEN);
    Map<String, byte[]> found = data.getAll(keys);
    if (found.containsKey(BROKEN)) {
      throw new GroupBrokenException(new String(found.get(BROKEN), StandardCharsets.UTF_8));
    }
    for (int r = 0; r < size; r++) {
      if (all[r] != null) {
        continue;
      }
      byte[] bytes = found.get(contributionKey(seq, r));
      HazelcastContribution c = bytes == null ? null : HazelcastContribution.decode(bytes);
      if (c == null || c.sequence() != seq || c.rank() != r) {
        throw new IllegalStateException(
            "the round agreed that every rank published seq "
                + seq
                + ", but map "
                + data.getName()
                + " holds "
                + (c == null ? "nothing" : "seq " + c.sequence())
                + " for rank "
                + r
                + ": the map lost data (a member died without a backup?)");
      }
      all[r] = c;
    }
  }

  /**
   * Reads what a rank last published at or before a round, for a timeout's message.
   *
   * @param seq the round
   * @param rank the rank
   * @return the rank's contribution to {@code seq}, else to {@code seq - 1}, else null
   */
  HazelcastContribution lastPublished(long seq, int rank) {
    for (long s = seq; s >= Math.max(0, seq - 1); s--) {
      byte[] bytes = data.get(contributionKey(s, rank));
      if (bytes != null) {
        HazelcastContribution c = HazelcastContribution.decode(bytes);
        if (c.sequence() == s) {
          return c;
        }
      }
    }
    return null;
  }

  /**
   * Marks the group broken for every rank that completes a round after this.
   *
   * @param reason what broke it, naming the rank
   */
  void markBroken(String reason) {
    data.set(BROKEN, reason.getBytes(StandardCharsets.UTF_8));
    control.set(BROKEN, reason);
  }

  /**
   * Records that a rank closed its handle, then counts it; the last rank to close destroys the
   * incarnation's objects.
   *
   * @param rank the closing rank
   * @param nextSequence the rank's number of calls made
   * @param lastCall a description of its last call
   */
  void leave(int rank, long nextSequence, String lastCall) {
    if (arming != null) {
      arming.cancel(true);
    }
    try {
      data.removeEntryListener(dataListener);
    } catch (RuntimeException e) {
      // the map is gone or the instance is shutting down: nothing left to remove
    }
    control.set(leftKey(rank), nextSequence + "\n" + lastCall);
    if (closed.incrementAndGet() == size) {
      data.destroy();
      control.destroy();
      for (ICountDownLatch latch : latches) {
        latch.destroy();
      }
      closed.destroy();
    }
  }

  /** The map holding registrations, departures and the broken marker, for the watch. */
  IMap<String, String> control() {
    return control;
  }

  /** The Hazelcast instance the group's objects live in. */
  HazelcastInstance hazelcast() {
    return hazelcast;
  }

  /** The group's name. */
  String name() {
    return name;
  }

  /** The incarnation: the how-many-th run of this group name in the cluster. */
  long incarnation() {
    return incarnation;
  }

  static String rankKey(int rank) {
    return "rank:" + rank;
  }

  static String leftKey(int rank) {
    return "left:" + rank;
  }

  /**
   * The round of the latch of round {@code seq} in the latch's own count: how many times its
   * slot's latch has been armed by then, once per use (the first use is the latch's round 1).
   */
  static int latchRound(long seq) {
    return Math.toIntExact(seq / RING + 1);
  }

  private static int slot(long seq) {
    return (int) (seq % RING);
  }

  private static String contributionKey(long seq, int rank) {
    return "c:" + slot(seq) + ":" + rank;
  }

  /**
   * Keeps the latest contribution of each slot and rank, and the broken marker, as the data map
   * writes them. Runs on Hazelcast's event threads; decoding a contribution is all it does.
   */
  private final class DataListener
      implements EntryAddedListener<String, byte[]>, EntryUpdatedListener<String, byte[]> {
    @Override
    public void entryAdded(EntryEvent<String, byte[]> event) {
      record(event.getKey(), event.getValue());
    }

    @Override
    public void entryUpdated(EntryEvent<String, byte[]> event) {
      record(event.getKey(), event.getValue());
    }

    private void record(String key, byte[] value) {
      if (value == null) {
        return;
      }
      if (key.equals(BROKEN)) {
        brokenSeen = new String(value, StandardCharsets.UTF_8);
        return;
      }
      HazelcastContribution c;
      try {
        c = HazelcastContribution.decode(value);
      } catch (IllegalStateException e) {
        return; // not readable here: the round reads it from the map instead
      }
      if (c.rank() < 0
          || c.rank() >= size
          || !key.equals(contributionKey(c.sequence(), c.rank()))) {
        return;
      }
      // events of one key arrive in order; the check keeps a late one from going back
      received.accumulateAndGet(
          slot(c.sequence()) * size + c.rank(),
          c,
          (old, now) -> old == null || now.sequence() > old.sequence() ? now : old);
    }
  }

  /** Another rank broke the group before this rank's round completed. */
  static final class GroupBrokenException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    GroupBrokenException(String reason) {
      super(reason, null, false, false);
    }
  }
}
