package io.kvtier.collective.hazelcast;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.config.ConfigValues;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Hazelcast instances of this process, one per distinct {@link HazelcastConfig}, shared by
 * reference count. The collective and the L3 store of one process must share one member: a
 * second member in the same process would count as another CP member and another data member.
 */
final class HazelcastInstances {

  private static final AtomicInteger NAMES = new AtomicInteger();
  private static final Map<HazelcastConfig, Shared> SHARED = new HashMap<>();

  private HazelcastInstances() {}

  /** A reference to a shared instance; closing it drops the reference. */
  static final class Lease implements AutoCloseable {
    private final HazelcastConfig config;
    private final Shared shared;
    private boolean closed;

    private Lease(HazelcastConfig config, Shared shared) {
      this.config = config;
      this.shared = shared;
    }

    /** The instance, running while the lease is open. */
    HazelcastInstance instance() {
      return shared.instance;
    }

    /** Drops the reference; the last one shuts the instance down. Idempotent. */
    @Override
    public void close() {
      close(false);
    }

    /**
     * Drops the reference; the last one shuts the instance down, gracefully unless a holder said
     * its rank group broke: then it terminates it (no migration, no Raft leave), since the
     * process is ending with the group's error and a graceful leave of a CP member whose group
     * just lost another waits for Raft. Idempotent.
     *
     * @param broken whether the holder's rank group broke
     */
    void close(boolean broken) {
      synchronized (SHARED) {
        if (closed) {
          return;
        }
        closed = true;
        shared.broken |= broken;
        if (--shared.references > 0) {
          return;
        }
        SHARED.remove(config, shared);
      }
      if (shared.broken) {
        shared.instance.getLifecycleService().terminate();
      } else {
        shared.instance.shutdown();
      }
    }
  }

  private static final class Shared {
    final HazelcastInstance instance;
    int references;
    // Whether a holder's rank group broke; guarded by SHARED.
    boolean broken;

    Shared(HazelcastInstance instance) {
      this.instance = instance;
    }
  }

  /**
   * Takes a reference to the instance of {@code config}, starting it if this process has none
   * running (a member in embedded mode, a client in client mode).
   *
   * @param config the configuration
   * @return the lease
   * @throws Unreachable if a client cannot reach the cluster within the join timeout
   * @throws IllegalStateException if a member cannot start
   */
  static Lease acquire(HazelcastConfig config) {
    Objects.requireNonNull(config, "config");
    // Starting holds the lock for seconds; acceptable, since a process starts one instance.
    synchronized (SHARED) {
      Shared shared = SHARED.get(config);
      if (shared == null || !shared.instance.getLifecycleService().isRunning()) {
        shared = new Shared(start(config));
        SHARED.put(config, shared);
      }
      shared.references++;
      return new Lease(config, shared);
    }
  }

  private static HazelcastInstance start(HazelcastConfig config) {
    String name = "kvtier-" + config.clusterName() + "-" + NAMES.incrementAndGet();
    return switch (config.mode()) {
      case EMBEDDED -> {
        try {
          yield Hazelcast.newHazelcastInstance(HazelcastSetup.member(config, name));
        } catch (RuntimeException e) {
          throw new IllegalStateException(
              "could not start a Hazelcast member of cluster '"
                  + config.clusterName()
                  + "' on "
                  + config.bindAddress()
                  + " ports "
                  + config.port()
                  + ".."
                  + (config.port() + config.portCount() - 1)
                  + ": "
                  + e.getMessage()
                  + " (free"
                  + " a port of the range or change "
                  + HazelcastConfig.PORT
                  + " / "
                  + HazelcastConfig.PORT_COUNT
                  + ")",
              e);
        }
      }
      case CLIENT -> {
        try {
          yield HazelcastClient.newHazelcastClient(HazelcastSetup.client(config, name));
        } catch (IllegalStateException e) {
          throw new Unreachable(
              "could not connect a Hazelcast client to cluster '"
                  + config.clusterName()
                  + "' at "
                  + config.members()
                  + " within "
                  + HazelcastConfig.JOIN_TIMEOUT
                  + "="
                  + ConfigValues.formatDuration(config.joinTimeout())
                  + ": start the cluster"
                  + " (for example 3 HazelcastCpMemberMain members) or fix "
                  + HazelcastConfig.MEMBERS
                  + " ("
                  + e.getMessage()
                  + ")",
              e);
        }
      }
    };
  }

  /** A client found no member of its cluster within the join timeout. */
  static final class Unreachable extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    Unreachable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Waits until the CP subsystem of an embedded member has formed.
   *
   * @param instance the member
   * @param config its configuration
   * @throws CollectiveTimeoutException naming the members found and how to add CP members
   */
  static void awaitCp(HazelcastInstance instance, HazelcastConfig config) {
    if (config.mode() == HazelcastConfig.Mode.CLIENT) {
      return;
    }
    boolean formed;
    try {
      formed =
          instance
              .getCPSubsystem()
              .getCPSubsystemManagementService()
              .awaitUntilDiscoveryCompleted(config.joinTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CollectiveTimeoutException("interrupted while waiting for the CP subsystem");
    }
    if (!formed) {
      throw new CollectiveTimeoutException(
          "the CP subsystem of Hazelcast cluster '"
              + config.clusterName()
              + "' did not form"
              + " within "
              + HazelcastConfig.JOIN_TIMEOUT
              + "="
              + ConfigValues.formatDuration(config.joinTimeout())
              + ": it needs "
              + config.cpMemberCount()
              + " CP members and the cluster has "
              + instance.getCluster().getMembers().size()
              + " "
              + instance.getCluster().getMembers()
              + ". With fewer ranks than "
              + HazelcastConfig.CP_MEMBER_COUNT
              + "="
              + config.cpMemberCount()
              + ", start plain CP members with the same hazelcast.*"
              + " settings: `kvtier cp-member` (or java -m"
              + " io.kvtier.collective.hazelcast/io.kvtier.collective.hazelcast"
              + ".HazelcastCpMemberMain), one per missing member");
    }
  }
}
