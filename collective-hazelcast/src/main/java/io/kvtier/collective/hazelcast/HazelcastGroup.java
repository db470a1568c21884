package io.kvtier.collective.hazelcast;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.cp.CPSubsystem;
import com.hazelcast.cp.IAtomicLong;
import com.hazelcast.cp.ICountDownLatch;
import com.hazelcast.map.IMap;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The cluster objects of one incarnation of a rank group, and the round protocol on them.
 *
 * <p>Round {@code s}: each rank writes its {@link HazelcastContribution} to the group's data map
 * ({@code IMap}, off the Raft log: a broadcast payload may be tens of KB), then counts down the
 * CP latch of the round and awaits it. The latch reaching zero is the agreement, linearizable
 * through Raft, that every rank has published; each rank then reads all contributions in one
 * {@code getAll} and checks and reduces them locally.
 *
 * <p>Nothing grows with the number of rounds: round {@code s} uses latch and map slot {@code s %
 * 3}. A rank at round {@code s} has finished round {@code s - 1}, so every rank has published
 * {@code s - 1}, which each did only after it finished reading round {@code s - 2}; hence the
 * slot of {@code s - 3} is free for reuse (two slots would do; the third costs nothing). The
 * first rank to reach a round re-arms its latch with {@code trySetCount}, which does nothing
 * while another rank of the same round is still to count down.
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

  private HazelcastGroup(HazelcastInstance hazelcast, String name, int size, long incarnation) {
    this.hazelcast = hazelcast;
    this.name = name;
    this.size = size;
    this.incarnation = incarnation;
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
   * @return the group
   * @throws IllegalArgumentException if the incarnation has another size, or the rank already
   *     joined it
   */
  static HazelcastGroup join(
      HazelcastInstance hazelcast, String name, int size, int rank, String who) {
    long ticket = hazelcast.getCPSubsystem()
        .getAtomicLong("kvtier.collective." + name + ".tickets").getAndIncrement();
    HazelcastGroup group = new HazelcastGroup(hazelcast, name, size, ticket / size);
    String sizeBefore = group.control.putIfAbsent("size", Integer.toString(size));
    if (sizeBefore != null && !sizeBefore.equals(Integer.toString(size))) {
      throw new IllegalArgumentException(
          "group '" + name + "' incarnation " + group.incarnation + " has " + sizeBefore
              + " ranks but rank " + rank + " joins with worldSize=" + size + ": every rank must"
              + " pass the same world size");
    }
    String before = group.control.putIfAbsent(rankKey(rank), who);
    if (before != null) {
      throw new IllegalArgumentException(
          "rank " + rank + " of group '" + name + "' incarnation " + group.incarnation
              + " was already joined by " + before + ": each rank joins once; if an earlier run"
              + " of this group died while joining, use a new group name");
    }
    return group;
  }

  /**
   * Publishes this rank's contribution, arrives at the round's latch, waits for every rank and
   * reads every contribution.
   *
   * @param mine this rank's contribution
   * @param timeoutNanos how long to wait for the other ranks
   * @return the contributions by rank, or null if the wait timed out
   * @throws InterruptedException if interrupted while waiting
   * @throws GroupBrokenException if another rank broke the group
   * @throws IllegalStateException if a contribution is missing although the round completed
   */
  HazelcastContribution[] exchange(HazelcastContribution mine, long timeoutNanos)
      throws InterruptedException {
    long seq = mine.sequence();
    data.set(contributionKey(seq, mine.rank()), mine.encode());
    ICountDownLatch latch = latches[slot(seq)];
    latch.trySetCount(size);
    latch.countDown();
    if (!latch.await(timeoutNanos, TimeUnit.NANOSECONDS)) {
      return null;
    }
    Set<String> keys = new LinkedHashSet<>();
    for (int r = 0; r < size; r++) {
      keys.add(contributionKey(seq, r));
    }
    keys.add(BROKEN);
    Map<String, byte[]> found = data.getAll(keys);
    if (found.containsKey(BROKEN)) {
      throw new GroupBrokenException(new String(found.get(BROKEN), StandardCharsets.UTF_8));
    }
    HazelcastContribution[] all = new HazelcastContribution[size];
    for (int r = 0; r < size; r++) {
      byte[] bytes = found.get(contributionKey(seq, r));
      HazelcastContribution c = bytes == null ? null : HazelcastContribution.decode(bytes);
      if (c == null || c.sequence() != seq || c.rank() != r) {
        throw new IllegalStateException(
            "the round agreed that every rank published seq " + seq + ", but map "
                + data.getName() + " holds " + (c == null ? "nothing" : "seq " + c.sequence())
                + " for rank " + r + ": the map lost data (a member died without a backup?)");
      }
      all[r] = c;
    }
    return all;
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

  private static int slot(long seq) {
    return (int) (seq % RING);
  }

  private static String contributionKey(long seq, int rank) {
    return "c:" + slot(seq) + ":" + rank;
  }

  /** Another rank broke the group before this rank's round completed. */
  static final class GroupBrokenException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    GroupBrokenException(String reason) {
      super(reason, null, false, false);
    }
  }
}
