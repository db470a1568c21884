package io.kvtier.collective.hazelcast;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.cp.ICountDownLatch;
import com.hazelcast.cp.internal.RaftInvocationManager;
import com.hazelcast.cp.internal.RaftService;
import com.hazelcast.cp.internal.datastructures.countdownlatch.operation.CountDownOp;
import com.hazelcast.cp.internal.datastructures.countdownlatch.proxy.CountDownLatchProxy;
import com.hazelcast.instance.impl.HazelcastInstanceProxy;
import com.hazelcast.internal.util.UuidUtil;

/**
 * Counts down a CP latch in one Raft call where it can. Hazelcast's {@code
 * ICountDownLatch.countDown()} makes two calls one after the other: a linearizable query for the
 * latch's round (how many times it was armed), then the count-down of that round. A {@link
 * HazelcastGroup} knows the round of each use of its latches, since its protocol arms each use
 * exactly once, so on a member it sends the count-down of that round directly through the
 * member's Raft invocation manager: the same operation, with the same retry of an indeterminate
 * result, as the proxy's second call.
 *
 * <p>This reaches into Hazelcast 5.4's internals ({@code com.hazelcast.cp.internal}, {@code
 * com.hazelcast.instance.impl}). On a client, or where they are not what 5.4 has, it falls back
 * to {@code countDown()}; {@code HazelcastCollectiveFailureTest} fails when an upgrade loses the
 * direct path on a member.
 */
final class HazelcastLatchArrival {

  private final RaftInvocationManager raft;

  private HazelcastLatchArrival(RaftInvocationManager raft) {
    this.raft = raft;
  }

  /**
   * The arrival of an instance: direct on a member, through the proxy on a client.
   *
   * @param hazelcast the member or client
   * @return the arrival
   */
  static HazelcastLatchArrival of(HazelcastInstance hazelcast) {
    try {
      if (hazelcast instanceof HazelcastInstanceProxy member) {
        RaftService service =
            member.getOriginal().node.getNodeEngine().getService(RaftService.SERVICE_NAME);
        return new HazelcastLatchArrival(service.getInvocationManager());
      }
    } catch (RuntimeException | LinkageError e) {
      // not the internals of 5.4, or the member is shutting down: use the proxy
    }
    return new HazelcastLatchArrival(null);
  }

  /** Whether count-downs take one Raft call. */
  boolean direct() {
    return raft != null;
  }

  /**
   * Counts down a latch in a known round.
   *
   * @param latch the latch; its name must hold no {@code '@'}
   * @param round the latch's round: the number of times it has been armed
   * @throws IllegalStateException if the latch has not been armed {@code round} times yet
   */
  void countDown(ICountDownLatch latch, int round) {
    if (raft != null && latch instanceof CountDownLatchProxy proxy) {
      raft.invoke(
              proxy.getGroupId(),
              new CountDownOp(latch.getName(), UuidUtil.newUnsecureUUID(), round))
          .joinInternal();
    } else {
      latch.countDown();
    }
  }
}
