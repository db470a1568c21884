package io.kvtier.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.ringbuffer.Ringbuffer;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Hazelcast publisher: a replica's client adds the same msgpack batches to a ringbuffer that
 * any reader (several routers) can read from any sequence still held.
 */
class HazelcastKvEventSinkTest {
  private static final String CLUSTER = "kvtier-events-test-" + ProcessHandle.current().pid();
  private static HazelcastInstance member;

  @BeforeAll
  static void startMember() {
    Config config = new Config();
    config.setClusterName(CLUSTER);
    config.setProperty("hazelcast.phone.home.enabled", "false");
    config.setProperty("hazelcast.wait.seconds.before.join", "0");
    config.getJetConfig().setEnabled(false);
    config.getNetworkConfig().setPort(freePort()).setPortAutoIncrement(true).setPortCount(50);
    config.getNetworkConfig().getInterfaces().setEnabled(true).addInterface("127.0.0.1");
    config.setProperty("hazelcast.socket.bind.any", "false");
    JoinConfig join = config.getNetworkConfig().getJoin();
    join.getMulticastConfig().setEnabled(false);
    join.getAutoDetectionConfig().setEnabled(false);
    join.getTcpIpConfig().setEnabled(true).setMembers(List.of("127.0.0.1"));
    member = Hazelcast.newHazelcastInstance(config);
  }

  @AfterAll
  static void stopMember() {
    member.shutdown();
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      return s.getLocalPort();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void aReplicasBatchesReachTheRingbufferThroughAClient() throws Exception {
    InetSocketAddress address = (InetSocketAddress) member.getLocalEndpoint().getSocketAddress();
    Map<String, String> props =
        Map.of(
            KvEventsConfig.PUBLISHER, "hazelcast",
            KvEventsConfig.HAZELCAST_ADDRESSES, "127.0.0.1:" + address.getPort(),
            KvEventsConfig.HAZELCAST_CLUSTER_NAME, CLUSTER,
            KvEventsConfig.DATA_PARALLEL_RANK, "2",
            KvEventsConfig.MAX_BATCH_EVENTS, "4");
    long sealed;
    try (KvEvents events = KvEvents.open(props, 0, "hazelcast");
        ScriptedEngine run = new ScriptedEngine(events.listener())) {
      for (int i = 0; i < 10; i++) {
        run.turn();
      }
      events.flush();
      sealed = events.stats().sealed();
    }
    Ringbuffer<byte[]> ring = member.getRingbuffer("kvtier-events-2");
    assertThat(ring.tailSequence() + 1).as("items").isEqualTo(sealed);
    long stored = 0;
    for (long s = ring.headSequence(); s <= ring.tailSequence(); s++) {
      byte[] item = ring.readOne(s);
      assertThat(ByteBuffer.wrap(item).getLong()).as("the batch's sequence").isEqualTo(s);
      @SuppressWarnings("unchecked")
      List<Object> batch =
          (List<Object>) MsgpackReader.decode(Arrays.copyOfRange(item, 8, item.length));
      assertThat(batch.get(2)).isEqualTo(2L);
      List<?> list = (List<?>) batch.get(1);
      if (s == 0) {
        assertThat(list.get(0)).isEqualTo(List.of("AllBlocksCleared"));
      }
      for (Object e : list) {
        stored += ((List<?>) e).get(0).equals("BlockStored") ? 1 : 0;
      }
    }
    assertThat(stored).isPositive();
  }

  @Test
  void aClusterThatDoesNotAnswerFailsTheOpenWithTheAddress() {
    int closed = freePort();
    Map<String, String> props =
        Map.of(
            KvEventsConfig.PUBLISHER,
            "hazelcast",
            KvEventsConfig.HAZELCAST_ADDRESSES,
            "127.0.0.1:" + closed,
            KvEventsConfig.HAZELCAST_CLUSTER_NAME,
            CLUSTER,
            KvEventsConfig.HAZELCAST_CONNECT_TIMEOUT,
            "1s");
    assertThatThrownBy(() -> KvEvents.open(props, 0, "none"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.events.hazelcast-addresses=127.0.0.1:" + closed)
        .hasMessageContaining("no Hazelcast cluster");
  }
}
