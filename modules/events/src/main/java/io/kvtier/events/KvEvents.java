package io.kvtier.events;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.core.HazelcastInstance;
import io.kvtier.core.cache.CacheEventListener;
import io.kvtier.core.cache.CacheEventPublisher;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The KV event publisher of one replica, as {@code kvtier serve} opens it from its {@code
 * kvtier.events.*} keys:
 *
 * <pre>{@code
 * try (KvEvents events = KvEvents.open(config.propertiesFor("kvtier"), rank, storeName)) {
 *   RankCache cache = RankCache.builder(cacheConfig).device(d).host(h, t).events(events.listener())
 *       .build();
 *   ...
 * }
 * }</pre>
 *
 * Every rank of a tensor- or context-parallel group takes the same cache decisions, so every rank
 * would report the same stream; rank 0 publishes and the others get {@link
 * CacheEventListener#NONE}, which costs the cache nothing.
 */
public final class KvEvents implements CacheEventPublisher {
  private final KvEventsConfig config;
  private final Optional<KvEventStream> stream;
  private final Optional<ZmqKvEventSink> zmq;

  private KvEvents(
      KvEventsConfig config, Optional<KvEventStream> stream, Optional<ZmqKvEventSink> zmq) {
    this.config = config;
    this.stream = stream;
    this.zmq = zmq;
  }

  /**
   * Opens the publisher the {@code kvtier.events.*} keys of {@code properties} ask for.
   *
   * @param properties full keys to raw values; keys outside {@code kvtier.events.} are ignored
   * @param rank this process's rank in its group; only rank 0 publishes
   * @param l3Medium the medium name of L3 blocks, the L3 store's name ({@code none} without L3)
   * @return the publisher; {@link #listener()} is {@link CacheEventListener#NONE} without one
   * @throws IllegalArgumentException for a bad key or value, or an address that cannot be bound
   */
  public static KvEvents open(Map<String, String> properties, int rank, String l3Medium) {
    return open(KvEventsConfig.fromProperties(properties), rank, l3Medium);
  }

  /**
   * Opens the publisher {@code config} asks for.
   *
   * @param config the settings
   * @param rank this process's rank in its group; only rank 0 publishes
   * @param l3Medium the medium name of L3 blocks
   * @return the publisher
   */
  public static KvEvents open(KvEventsConfig config, int rank, String l3Medium) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(l3Medium, "l3Medium");
    if (rank < 0) {
      throw new IllegalArgumentException("rank=" + rank + " must be >= 0");
    }
    if (config.publisher() == KvEventsConfig.Publisher.NONE || rank != 0) {
      return new KvEvents(config, Optional.empty(), Optional.empty());
    }
    KvEventCodec codec = new KvEventCodec(config.dataParallelRank(), l3Medium);
    return switch (config.publisher()) {
      case ZMQ -> {
        ZmqKvEventSink sink =
            new ZmqKvEventSink(
                config.endpoint(), config.replayEndpoint(), config.topic(), config.replaySize());
        yield new KvEvents(config, Optional.of(stream(sink, codec, config)), Optional.of(sink));
      }
      case HAZELCAST -> {
        HazelcastInstance client = hazelcastClient(config);
        HazelcastKvEventSink sink =
            new HazelcastKvEventSink(client, config.ringbufferName(), client::shutdown);
        yield new KvEvents(config, Optional.of(stream(sink, codec, config)), Optional.empty());
      }
      case NONE -> throw new AssertionError("handled above");
    };
  }

  private static KvEventStream stream(KvEventSink sink, KvEventCodec codec, KvEventsConfig c) {
    return new KvEventStream(sink, codec, c.bufferSize(), c.maxBatchEvents(), c.flushInterval());
  }

  /**
   * A Hazelcast client of the cluster {@code config} names ({@code hazelcast-addresses}, {@code
   * hazelcast-cluster-name}, {@code hazelcast-connect-timeout}): the publisher's, and a router's
   * that reads the replicas' ringbuffers.
   *
   * @param config the settings
   * @return the connected client; the caller shuts it down
   * @throws IllegalArgumentException if no cluster answered in time, naming the addresses
   */
  public static HazelcastInstance hazelcastClient(KvEventsConfig config) {
    ClientConfig client = new ClientConfig();
    client.setClusterName(config.hazelcastClusterName());
    client.setProperty("hazelcast.phone.home.enabled", "false");
    client.getNetworkConfig().setAddresses(config.hazelcastAddresses());
    client.getNetworkConfig().getAutoDetectionConfig().setEnabled(false);
    // Fail at open rather than retry for ever when the cluster is not there.
    long timeout = config.hazelcastConnectTimeout().toMillis();
    client
        .getConnectionStrategyConfig()
        .getConnectionRetryConfig()
        .setClusterConnectTimeoutMillis(timeout);
    try {
      return HazelcastClient.newHazelcastClient(client);
    } catch (IllegalStateException e) {
      throw new IllegalArgumentException(
          KvEventsConfig.HAZELCAST_ADDRESSES
              + "="
              + String.join(",", config.hazelcastAddresses())
              + ": no Hazelcast cluster '"
              + config.hazelcastClusterName()
              + "' answered within "
              + timeout
              + " ms ("
              + e.getMessage()
              + "); start it, or fix the addresses or "
              + KvEventsConfig.HAZELCAST_CLUSTER_NAME,
          e);
    }
  }

  /** The settings it was opened with. */
  public KvEventsConfig config() {
    return config;
  }

  /** Whether this process publishes (a publisher is configured and this is rank 0). */
  public boolean publishing() {
    return stream.isPresent();
  }

  /** The listener to register with the cache; {@link CacheEventListener#NONE} if not publishing. */
  @Override
  public CacheEventListener listener() {
    return stream.<CacheEventListener>map(s -> s).orElse(CacheEventListener.NONE);
  }

  /** Seals the open batch now (a server may call it at the end of each scheduler tick). */
  public void flush() {
    stream.ifPresent(KvEventStream::flush);
  }

  /** The publisher's counters; all zero if not publishing. */
  public KvEventStats stats() {
    return stream.map(KvEventStream::stats).orElse(new KvEventStats(0, 0, 0, 0, 0));
  }

  /** The ZeroMQ PUB address with its real port, for a {@code zmq} publisher. */
  public Optional<String> endpoint() {
    return zmq.map(ZmqKvEventSink::endpoint);
  }

  /** The ZeroMQ replay address with its real port, for a {@code zmq} publisher with replay. */
  public Optional<String> replayEndpoint() {
    return zmq.flatMap(ZmqKvEventSink::replayEndpoint);
  }

  /** Sends what is sealed and closes the sockets or client. */
  @Override
  public void close() {
    stream.ifPresent(KvEventStream::close);
  }
}
