package io.kvtier.events;

import io.kvtier.spi.config.ConfigReader;
import io.kvtier.spi.config.ConfigValues;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The typed configuration of the KV event publishers, keys {@code kvtier.events.*} (the engine's
 * config passes them through to this module; see docs/EVENTS.md).
 *
 * @param publisher where events go ({@value #PUBLISHER}): {@code none}, {@code zmq} (vLLM's wire
 *     format over a ZeroMQ PUB socket) or {@code hazelcast} (a ringbuffer)
 * @param endpoint the PUB socket's address ({@value #ENDPOINT}); bound if it has a {@code *},
 *     {@code ::}, or is {@code ipc://} or {@code inproc://}, else connected (vLLM's rule)
 * @param replayEndpoint the ROUTER socket that resends past batches ({@value #REPLAY_ENDPOINT});
 *     empty: no replay
 * @param topic the first frame of every message ({@value #TOPIC}), empty by default
 * @param bufferSize sealed batches waiting for the publisher thread ({@value #BUFFER_SIZE}); a
 *     batch sealed while it is full is dropped and counted, and its sequence number is skipped
 * @param replaySize past batches kept for replay ({@value #REPLAY_SIZE})
 * @param maxBatchEvents events after which a batch is sealed at once ({@value
 *     #MAX_BATCH_EVENTS}); otherwise the publisher seals what has come every {@code
 *     flushInterval}
 * @param flushInterval how often the publisher seals the events that came ({@value
 *     #FLUSH_INTERVAL})
 * @param dataParallelRank this replica's data-parallel rank, the batch's third field ({@value
 *     #DATA_PARALLEL_RANK})
 * @param hazelcastAddresses the cluster a {@code hazelcast} publisher connects to as a client
 *     ({@value #HAZELCAST_ADDRESSES}, comma separated {@code host:port})
 * @param hazelcastClusterName that cluster's name ({@value #HAZELCAST_CLUSTER_NAME})
 * @param hazelcastConnectTimeout how long opening a {@code hazelcast} publisher waits for the
 *     cluster ({@value #HAZELCAST_CONNECT_TIMEOUT})
 * @param ringbuffer the ringbuffer a {@code hazelcast} publisher adds to; empty: {@code
 *     kvtier-events-<dataParallelRank>} ({@value #RINGBUFFER})
 */
public record KvEventsConfig(
    Publisher publisher,
    String endpoint,
    Optional<String> replayEndpoint,
    String topic,
    int bufferSize,
    int replaySize,
    int maxBatchEvents,
    Duration flushInterval,
    int dataParallelRank,
    List<String> hazelcastAddresses,
    String hazelcastClusterName,
    Duration hazelcastConnectTimeout,
    Optional<String> ringbuffer) {

  /** Where the events go. */
  public enum Publisher {
    /** Nowhere: the cache computes nothing for events. */
    NONE,
    /** vLLM's ZeroMQ + msgpack wire format, with a replay socket. */
    ZMQ,
    /** A Hazelcast ringbuffer of the same msgpack batches. */
    HAZELCAST
  }

  /** The prefix of every key. */
  public static final String PREFIX = "kvtier.events.";

  /** Key of {@link #publisher()}. */
  public static final String PUBLISHER = "kvtier.events.publisher";

  /** Key of {@link #endpoint()}. */
  public static final String ENDPOINT = "kvtier.events.endpoint";

  /** Key of {@link #replayEndpoint()}. */
  public static final String REPLAY_ENDPOINT = "kvtier.events.replay-endpoint";

  /** Key of {@link #topic()}. */
  public static final String TOPIC = "kvtier.events.topic";

  /** Key of {@link #bufferSize()}. */
  public static final String BUFFER_SIZE = "kvtier.events.buffer-size";

  /** Key of {@link #replaySize()}. */
  public static final String REPLAY_SIZE = "kvtier.events.replay-size";

  /** Key of {@link #maxBatchEvents()}. */
  public static final String MAX_BATCH_EVENTS = "kvtier.events.max-batch-events";

  /** Key of {@link #flushInterval()}. */
  public static final String FLUSH_INTERVAL = "kvtier.events.flush-interval";

  /** Key of {@link #dataParallelRank()}. */
  public static final String DATA_PARALLEL_RANK = "kvtier.events.data-parallel-rank";

  /** Key of {@link #hazelcastAddresses()}. */
  public static final String HAZELCAST_ADDRESSES = "kvtier.events.hazelcast-addresses";

  /** Key of {@link #hazelcastClusterName()}. */
  public static final String HAZELCAST_CLUSTER_NAME = "kvtier.events.hazelcast-cluster-name";

  /** Key of {@link #hazelcastConnectTimeout()}. */
  public static final String HAZELCAST_CONNECT_TIMEOUT = "kvtier.events.hazelcast-connect-timeout";

  /** Key of {@link #ringbuffer()}. */
  public static final String RINGBUFFER = "kvtier.events.ringbuffer";

  /** Every key, in the order of the record. */
  public static final List<String> KEYS =
      List.of(
          PUBLISHER,
          ENDPOINT,
          REPLAY_ENDPOINT,
          TOPIC,
          BUFFER_SIZE,
          REPLAY_SIZE,
          MAX_BATCH_EVENTS,
          FLUSH_INTERVAL,
          DATA_PARALLEL_RANK,
          HAZELCAST_ADDRESSES,
          HAZELCAST_CLUSTER_NAME,
          HAZELCAST_CONNECT_TIMEOUT,
          RINGBUFFER);

  /** vLLM's default PUB port. */
  public static final String DEFAULT_ENDPOINT = "tcp://*:5557";

  /** Default of {@link #bufferSize()}. */
  public static final int DEFAULT_BUFFER_SIZE = 1024;

  /** Default of {@link #replaySize()}, vLLM's {@code buffer_steps}. */
  public static final int DEFAULT_REPLAY_SIZE = 10_000;

  /** Default of {@link #maxBatchEvents()}. */
  public static final int DEFAULT_MAX_BATCH_EVENTS = 1024;

  /** Default of {@link #flushInterval()}. */
  public static final Duration DEFAULT_FLUSH_INTERVAL = Duration.ofMillis(10);

  /** Default of {@link #hazelcastClusterName()}, Hazelcast's own. */
  public static final String DEFAULT_HAZELCAST_CLUSTER_NAME = "dev";

  /** Default of {@link #hazelcastConnectTimeout()}. */
  public static final Duration DEFAULT_HAZELCAST_CONNECT_TIMEOUT = Duration.ofSeconds(10);

  /** The configuration with every default: no publisher. */
  public static final KvEventsConfig DEFAULTS = fromProperties(Map.of());

  /** Validates the fields. */
  public KvEventsConfig {
    Objects.requireNonNull(publisher, "publisher");
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(replayEndpoint, "replayEndpoint");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(flushInterval, "flushInterval");
    hazelcastAddresses = List.copyOf(hazelcastAddresses);
    Objects.requireNonNull(hazelcastClusterName, "hazelcastClusterName");
    Objects.requireNonNull(hazelcastConnectTimeout, "hazelcastConnectTimeout");
    Objects.requireNonNull(ringbuffer, "ringbuffer");
    ConfigValues.checkRange(BUFFER_SIZE, bufferSize, 1, 1 << 20);
    ConfigValues.checkRange(REPLAY_SIZE, replaySize, 0, 1 << 24);
    ConfigValues.checkRange(MAX_BATCH_EVENTS, maxBatchEvents, 1, 1 << 20);
    ConfigValues.checkRange(DATA_PARALLEL_RANK, dataParallelRank, 0, Integer.MAX_VALUE);
    if (flushInterval.isNegative() || flushInterval.isZero()) {
      throw new IllegalArgumentException(
          FLUSH_INTERVAL
              + "="
              + ConfigValues.formatDuration(flushInterval)
              + " must be positive, for example 10ms");
    }
    if (publisher == Publisher.ZMQ && !endpoint.contains("://")) {
      throw new IllegalArgumentException(
          ENDPOINT
              + "="
              + endpoint
              + " is not a ZeroMQ address: write transport://address, for example "
              + DEFAULT_ENDPOINT);
    }
    if (publisher == Publisher.ZMQ
        && replayEndpoint.isPresent()
        && !replayEndpoint.get().contains("://")) {
      throw new IllegalArgumentException(
          REPLAY_ENDPOINT
              + "="
              + replayEndpoint.get()
              + " is not a ZeroMQ address: write transport://address, for example tcp://*:5558");
    }
    if (publisher == Publisher.HAZELCAST && hazelcastAddresses.isEmpty()) {
      throw new IllegalArgumentException(
          PUBLISHER
              + "=hazelcast needs "
              + HAZELCAST_ADDRESSES
              + ", the cluster to publish to (host:port, comma separated)");
    }
  }

  /**
   * Parses the {@code kvtier.events.*} keys of {@code properties}; other keys are ignored.
   *
   * @param properties full keys to raw values
   * @return the config
   * @throws IllegalArgumentException for an unknown {@code kvtier.events.*} key (naming the
   *     closest) or a bad value (naming the key and the value)
   */
  public static KvEventsConfig fromProperties(Map<String, String> properties) {
    Objects.requireNonNull(properties, "properties");
    // The engine's reader owns the rest of the kvtier namespace; this one sees only its keys,
    // so that its unknown-key check is about them alone.
    Map<String, String> own = new LinkedHashMap<>();
    properties.forEach(
        (k, v) -> {
          if (k.startsWith(PREFIX)) {
            own.put(k, v);
          }
        });
    ConfigReader r = ConfigReader.of("kvtier", own);
    KvEventsConfig config =
        new KvEventsConfig(
            r.getEnum(PUBLISHER, Publisher.class, "event publisher", Publisher.NONE),
            r.getString(ENDPOINT, DEFAULT_ENDPOINT),
            r.get(REPLAY_ENDPOINT).filter(s -> !s.isEmpty()),
            r.getString(TOPIC, ""),
            r.getInt(BUFFER_SIZE, DEFAULT_BUFFER_SIZE),
            r.getInt(REPLAY_SIZE, DEFAULT_REPLAY_SIZE),
            r.getInt(MAX_BATCH_EVENTS, DEFAULT_MAX_BATCH_EVENTS),
            r.getPositiveDuration(FLUSH_INTERVAL, DEFAULT_FLUSH_INTERVAL),
            r.getInt(DATA_PARALLEL_RANK, 0),
            r.get(HAZELCAST_ADDRESSES).map(KvEventsConfig::list).orElse(List.of()),
            r.getString(HAZELCAST_CLUSTER_NAME, DEFAULT_HAZELCAST_CLUSTER_NAME),
            r.getPositiveDuration(HAZELCAST_CONNECT_TIMEOUT, DEFAULT_HAZELCAST_CONNECT_TIMEOUT),
            r.get(RINGBUFFER).filter(s -> !s.isEmpty()));
    r.checkUnknownKeys();
    return config;
  }

  /** The ringbuffer name a {@code hazelcast} publisher uses. */
  public String ringbufferName() {
    return ringbuffer.orElse("kvtier-events-" + dataParallelRank);
  }

  private static List<String> list(String value) {
    return java.util.Arrays.stream(value.split(","))
        .map(String::strip)
        .filter(s -> !s.isEmpty())
        .toList();
  }
}
