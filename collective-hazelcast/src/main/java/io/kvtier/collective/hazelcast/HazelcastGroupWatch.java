package io.kvtier.collective.hazelcast;

import com.hazelcast.cluster.Member;
import com.hazelcast.cluster.MembershipEvent;
import com.hazelcast.cluster.MembershipListener;
import com.hazelcast.core.EntryEvent;
import com.hazelcast.map.listener.EntryAddedListener;
import com.hazelcast.map.listener.EntryUpdatedListener;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveRankLostException;
import io.kvtier.spi.CollectiveTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Tells a waiting rank early that its round cannot complete: another rank broke the group, closed
 * its handle, or its cluster member left the cluster (the rank's process died). Without it a
 * waiting rank would learn this only from its watchdog.
 *
 * <p>Events arrive on Hazelcast's threads and only record facts; the waiting rank interprets
 * them, so no remote call runs on an event thread.
 */
final class HazelcastGroupWatch {

  /** Bound on reading the registrations when a member leaves. */
  private static final long LOOKUP_MILLIS = 2_000;

  private final HazelcastGroup group;
  private final int rank;
  private final int size;
  private final Map<Integer, String> left = new ConcurrentHashMap<>();
  private final Map<UUID, Member> removed = new ConcurrentHashMap<>();
  private volatile String brokenBy;

  /** Removals already mapped to no waiting-for rank; read and written by the rank's thread. */
  private int removalsExplained;

  private UUID entryRegistration;
  private UUID membershipRegistration;

  private HazelcastGroupWatch(HazelcastGroup group, int rank, int size) {
    this.group = group;
    this.rank = rank;
    this.size = size;
  }

  /**
   * Starts watching a group.
   *
   * @param group the group
   * @param rank the watching rank
   * @param size the group's size
   * @return the watch; {@link #stop()} it when the rank closes
   */
  static HazelcastGroupWatch start(HazelcastGroup group, int rank, int size) {
    HazelcastGroupWatch watch = new HazelcastGroupWatch(group, rank, size);
    watch.entryRegistration = group.control().addEntryListener(watch.new ControlListener(), true);
    watch.membershipRegistration =
        group.hazelcast().getCluster().addMembershipListener(watch.new Members());
    return watch;
  }

  /** Removes the listeners; best effort, the cluster may be gone. */
  void stop() {
    try {
      group.control().removeEntryListener(entryRegistration);
      group.hazelcast().getCluster().removeMembershipListener(membershipRegistration);
    } catch (RuntimeException e) {
      // the instance is shutting down or the map was destroyed: nothing left to remove
    }
  }

  /**
   * Why round {@code seq} cannot complete, if a known event says so.
   *
   * @param seq the round this rank waits in
   * @param waiting a description of this rank's call
   * @return the failure, naming the rank at fault: a {@link CollectiveRankLostException} when a
   *     rank closed its handle or its member left the cluster; a {@link
   *     CollectiveTimeoutException} when
   *     another rank broke the group because it timed out (it waited for the same missing rank
   *     as this one, and got there first), else a {@link CollectiveException}
   */
  Optional<CollectiveException> failure(long seq, String waiting) {
    String broken = brokenBy;
    if (broken != null) {
      String message =
          "group '"
              + group.name()
              + "' was broken by another rank while rank "
              + rank
              + " waited in "
              + waiting
              + " seq "
              + seq
              + ": "
              + broken;
      return Optional.of(
          broken.contains(" failed: " + HazelcastCollective.TIMEOUT_PREFIX)
              ? new CollectiveTimeoutException(message)
              : new CollectiveException(message, null));
    }
    for (Map.Entry<Integer, String> e : left.entrySet()) {
      long next = nextSequence(e.getValue());
      if (e.getKey() != rank && next <= seq) {
        return Optional.of(
            new CollectiveRankLostException(
                e.getKey(),
                "rank "
                    + e.getKey()
                    + " of group '"
                    + group.name()
                    + "' closed its handle after "
                    + next
                    + " calls (last: "
                    + lastCall(e.getValue())
                    + "), so rank "
                    + rank
                    + " waits for it in vain in "
                    + waiting
                    + " seq "
                    + seq));
      }
    }
    int removals = removed.size();
    if (removals == removalsExplained) {
      return Optional.empty();
    }
    removalsExplained = removals;
    // deadRank resets removalsExplained when a lookup failed, so the next poll retries
    return deadRank(seq, waiting);
  }

  /** Maps the members that left to ranks through the registrations in the control map. */
  private Optional<CollectiveException> deadRank(long seq, String waiting) {
    List<CompletableFuture<String>> registrations = new ArrayList<>();
    List<CompletableFuture<String>> departures = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      registrations.add(group.control().getAsync(HazelcastGroup.rankKey(r)).toCompletableFuture());
      departures.add(group.control().getAsync(HazelcastGroup.leftKey(r)).toCompletableFuture());
    }
    for (int r = 0; r < size; r++) {
      String who = value(registrations.get(r));
      if (who == null && r != rank) {
        // unknown yet (lookup failed or the rank never registered): look again next time
        removalsExplained = -1;
      }
      if (r == rank || who == null) {
        continue;
      }
      Member member = removed.get(memberUuid(who));
      String departure = value(departures.get(r));
      boolean leftCleanly = departure != null && nextSequence(departure) > seq;
      if (member != null && !leftCleanly) {
        return Optional.of(
            new CollectiveRankLostException(
                r,
                "rank "
                    + r
                    + " of group '"
                    + group.name()
                    + "' is gone: its"
                    + " Hazelcast member "
                    + member.getAddress()
                    + " ("
                    + member.getUuid()
                    + ") left the"
                    + " cluster (the rank's process died or was cut off) while rank "
                    + rank
                    + " waited in "
                    + waiting
                    + " seq "
                    + seq));
      }
    }
    return Optional.empty();
  }

  private static String value(CompletableFuture<String> future) {
    try {
      return future.get(LOOKUP_MILLIS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    } catch (Exception e) {
      return null;
    }
  }

  /**
   * How a rank names its process in its registration.
   *
   * @param uuid the member or client UUID
   * @param where the address, for messages
   * @return the registration value
   */
  static String registration(UUID uuid, String where) {
    return uuid + " at " + where;
  }

  private static UUID memberUuid(String registration) {
    try {
      return UUID.fromString(registration.split(" ", 2)[0]);
    } catch (IllegalArgumentException e) {
      return new UUID(0, 0);
    }
  }

  private static long nextSequence(String departure) {
    try {
      return Long.parseLong(departure.split("\n", 2)[0]);
    } catch (NumberFormatException e) {
      return Long.MAX_VALUE;
    }
  }

  private static String lastCall(String departure) {
    String[] parts = departure.split("\n", 2);
    return parts.length > 1 ? parts[1] : "?";
  }

  /** Records departures and the broken marker of the control map. */
  private final class ControlListener
      implements EntryAddedListener<String, String>, EntryUpdatedListener<String, String> {
    @Override
    public void entryAdded(EntryEvent<String, String> event) {
      record(event.getKey(), event.getValue());
    }

    @Override
    public void entryUpdated(EntryEvent<String, String> event) {
      record(event.getKey(), event.getValue());
    }

    private void record(String key, String value) {
      if (key.equals(HazelcastGroup.BROKEN)) {
        brokenBy = value;
      } else if (key.startsWith("left:")) {
        try {
          left.put(Integer.parseInt(key.substring("left:".length())), value);
        } catch (NumberFormatException e) {
          // not a key of ours: ignore
        }
      }
    }
  }

  /** Records members that left the cluster. */
  private final class Members implements MembershipListener {
    @Override
    public void memberAdded(MembershipEvent event) {}

    @Override
    public void memberRemoved(MembershipEvent event) {
      removed.put(event.getMember().getUuid(), event.getMember());
    }
  }
}
