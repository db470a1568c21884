package io.kvtier.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.CacheEventListener;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The {@code kvtier.events.*} keys: defaults, the full mapping, and each error. */
class KvEventsConfigTest {

  @Test
  void theDefaultsPublishNothing() {
    KvEventsConfig c = KvEventsConfig.DEFAULTS;
    assertThat(c.publisher()).isEqualTo(KvEventsConfig.Publisher.NONE);
    assertThat(c.endpoint()).isEqualTo("tcp://*:5557");
    assertThat(c.replayEndpoint()).isEmpty();
    assertThat(c.topic()).isEmpty();
    assertThat(c.bufferSize()).isEqualTo(1024);
    assertThat(c.replaySize()).isEqualTo(10_000);
    assertThat(c.maxBatchEvents()).isEqualTo(1024);
    assertThat(c.flushInterval()).isEqualTo(Duration.ofMillis(10));
    assertThat(c.dataParallelRank()).isZero();
    assertThat(c.hazelcastAddresses()).isEmpty();
    assertThat(c.hazelcastClusterName()).isEqualTo("dev");
    assertThat(c.hazelcastConnectTimeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(c.ringbufferName()).isEqualTo("kvtier-events-0");
    try (KvEvents events = KvEvents.open(Map.of(), 0, "none")) {
      assertThat(events.publishing()).isFalse();
      assertThat(events.listener()).isSameAs(CacheEventListener.NONE);
    }
  }

  @Test
  void everyKeyMapsToItsField() {
    Map<String, String> all =
        Map.ofEntries(
            Map.entry(KvEventsConfig.PUBLISHER, "hazelcast"),
            Map.entry(KvEventsConfig.ENDPOINT, "tcp://proxy:6000"),
            Map.entry(KvEventsConfig.REPLAY_ENDPOINT, "tcp://*:6001"),
            Map.entry(KvEventsConfig.TOPIC, "kv"),
            Map.entry(KvEventsConfig.BUFFER_SIZE, "8"),
            Map.entry(KvEventsConfig.REPLAY_SIZE, "9"),
            Map.entry(KvEventsConfig.MAX_BATCH_EVENTS, "10"),
            Map.entry(KvEventsConfig.FLUSH_INTERVAL, "2ms"),
            Map.entry(KvEventsConfig.DATA_PARALLEL_RANK, "3"),
            Map.entry(KvEventsConfig.HAZELCAST_ADDRESSES, "a:1, b:2"),
            Map.entry(KvEventsConfig.HAZELCAST_CLUSTER_NAME, "fleet"),
            Map.entry(KvEventsConfig.HAZELCAST_CONNECT_TIMEOUT, "3s"),
            Map.entry(KvEventsConfig.RINGBUFFER, "events"),
            Map.entry("kvtier.page-size", "16"));
    assertThat(all.keySet()).containsAll(KvEventsConfig.KEYS);
    KvEventsConfig c = KvEventsConfig.fromProperties(all);
    assertThat(c)
        .isEqualTo(
            new KvEventsConfig(
                KvEventsConfig.Publisher.HAZELCAST,
                "tcp://proxy:6000",
                Optional.of("tcp://*:6001"),
                "kv",
                8,
                9,
                10,
                Duration.ofMillis(2),
                3,
                List.of("a:1", "b:2"),
                "fleet",
                Duration.ofSeconds(3),
                Optional.of("events")));
    assertThat(c.ringbufferName()).isEqualTo("events");
  }

  @Test
  void anUnknownKeyNamesTheClosest() {
    assertThatThrownBy(() -> KvEventsConfig.fromProperties(Map.of("kvtier.events.topik", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'kvtier.events.topik'")
        .hasMessageContaining("did you mean kvtier.events.topic");
  }

  @Test
  void badValuesAreNamed() {
    assertThatThrownBy(() -> parse(KvEventsConfig.PUBLISHER, "kafka"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kafka")
        .hasMessageContaining("zmq");
    assertThatThrownBy(() -> parse(KvEventsConfig.BUFFER_SIZE, "0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(KvEventsConfig.BUFFER_SIZE);
    assertThatThrownBy(() -> parse(KvEventsConfig.FLUSH_INTERVAL, "0ms"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(KvEventsConfig.FLUSH_INTERVAL);
    assertThatThrownBy(
            () ->
                KvEventsConfig.fromProperties(
                    Map.of(KvEventsConfig.PUBLISHER, "zmq", KvEventsConfig.ENDPOINT, "5557")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.events.endpoint=5557 is not a ZeroMQ address");
    assertThatThrownBy(
            () ->
                KvEventsConfig.fromProperties(
                    Map.of(
                        KvEventsConfig.PUBLISHER, "zmq", KvEventsConfig.REPLAY_ENDPOINT, "5558")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.events.replay-endpoint=5558 is not a ZeroMQ address");
    assertThatThrownBy(() -> parse(KvEventsConfig.PUBLISHER, "hazelcast"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs kvtier.events.hazelcast-addresses");
  }

  @Test
  void onlyRankZeroPublishes() {
    Map<String, String> zmq =
        Map.of(KvEventsConfig.PUBLISHER, "zmq", KvEventsConfig.ENDPOINT, "tcp://127.0.0.1:*");
    try (KvEvents other = KvEvents.open(zmq, 1, "none")) {
      assertThat(other.publishing()).isFalse();
      assertThat(other.listener()).isSameAs(CacheEventListener.NONE);
      assertThat(other.endpoint()).isEmpty();
    }
    try (KvEvents first = KvEvents.open(zmq, 0, "none")) {
      assertThat(first.publishing()).isTrue();
      assertThat(first.endpoint().orElseThrow()).startsWith("tcp://127.0.0.1:");
      assertThat(first.replayEndpoint()).isEmpty();
    }
  }

  @Test
  void aBusyPortIsNamedAtOpen() {
    Map<String, String> zmq =
        Map.of(KvEventsConfig.PUBLISHER, "zmq", KvEventsConfig.ENDPOINT, "tcp://127.0.0.1:*");
    try (KvEvents first = KvEvents.open(zmq, 0, "none")) {
      String taken = first.endpoint().orElseThrow().replace("127.0.0.1", "*");
      assertThatThrownBy(
              () ->
                  KvEvents.open(
                      Map.of(KvEventsConfig.PUBLISHER, "zmq", KvEventsConfig.ENDPOINT, taken),
                      0,
                      "none"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("kvtier.events.endpoint=" + taken + ": cannot bind");
    }
  }

  private static KvEventsConfig parse(String key, String value) {
    return KvEventsConfig.fromProperties(Map.of(key, value));
  }
}
