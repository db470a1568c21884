package io.kvtier.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.CacheStats;
import io.kvtier.core.cache.RankCache;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Acceptance: an independent subscriber (JeroMQ sockets, the test's own msgpack decoder, its own
 * SHA-256 chain) joins a running replica late, sees the gap, has it replayed, and the index it
 * builds from vLLM's schema agrees with the engine's own counters and pools; every stored block's
 * hash covers its parent's.
 */
class ZmqEventsAcceptanceTest {

  /** What the subscriber has learned, from decoded batches applied in sequence order. */
  static final class Index {
    final Map<String, Set<Long>> blocks = new HashMap<>();
    final Map<String, Long> stored = new HashMap<>();
    final Map<String, Long> removed = new HashMap<>();
    // The subscriber's own full hashes, by their 64-bit wire form, to check each chain link.
    final Map<Long, byte[]> full = new HashMap<>();
    int cleared;
    int parentLinks;

    @SuppressWarnings("unchecked")
    void apply(long sequence, List<Object> batch) throws Exception {
      assertThat(batch).as("EventBatch [ts, events, data_parallel_rank]").hasSize(3);
      assertThat(batch.get(0)).isInstanceOf(Double.class);
      assertThat(batch.get(2)).as("data_parallel_rank").isEqualTo(3L);
      for (Object o : (List<Object>) batch.get(1)) {
        List<Object> e = (List<Object>) o;
        switch ((String) e.get(0)) {
          case "AllBlocksCleared" -> {
            assertThat(e).hasSize(1);
            assertThat(sequence).as("AllBlocksCleared opens the stream").isZero();
            blocks.clear();
            cleared++;
          }
          case "BlockStored" -> {
            assertThat(e).hasSize(7);
            List<Object> hashes = (List<Object>) e.get(1);
            Long parent = (Long) e.get(2);
            List<Object> tokens = (List<Object>) e.get(3);
            long blockSize = (Long) e.get(4);
            assertThat(blockSize).isEqualTo(ScriptedEngine.PAGE_SIZE);
            assertThat(e.get(5)).as("lora_id of namespace 0").isNull();
            String medium = (String) e.get(6);
            assertThat(tokens).hasSize(hashes.size() * (int) blockSize);
            Set<Long> held = blocks.computeIfAbsent(medium, m -> new HashSet<>());
            byte[] previous = null;
            if (parent != null) {
              assertThat(held).as("parent of a block stored in %s", medium).contains(parent);
              previous = full.get(parent);
              parentLinks++;
            }
            for (int b = 0; b < hashes.size(); b++) {
              MessageDigest md = MessageDigest.getInstance("SHA-256");
              if (previous != null) {
                md.update(previous);
              }
              for (int i = 0; i < blockSize; i++) {
                int t = (int) (long) (Long) tokens.get(b * (int) blockSize + i);
                md.update(
                    ByteBuffer.allocate(4)
                        .order(java.nio.ByteOrder.LITTLE_ENDIAN)
                        .putInt(t)
                        .array());
              }
              previous = md.digest();
              long expected = ByteBuffer.wrap(previous).getLong();
              long hash = (Long) hashes.get(b);
              assertThat(hash)
                  .as("block %d's hash covers its parent's and its tokens", b)
                  .isEqualTo(expected);
              full.put(hash, previous);
              assertThat(held.add(hash)).as("block stored twice in %s", medium).isTrue();
            }
            stored.merge(medium, (long) hashes.size(), Long::sum);
          }
          case "BlockRemoved" -> {
            assertThat(e).hasSize(3);
            String medium = (String) e.get(2);
            Set<Long> held = blocks.computeIfAbsent(medium, m -> new HashSet<>());
            for (Object h : (List<Object>) e.get(1)) {
              assertThat(held.remove((Long) h)).as("removed from %s, not held", medium).isTrue();
            }
            removed.merge(medium, (long) ((List<Object>) e.get(1)).size(), Long::sum);
          }
          default -> throw new AssertionError("unknown event tag " + e.get(0));
        }
      }
    }

    int held(String medium) {
      return blocks.getOrDefault(medium, Set.of()).size();
    }
  }

  @Test
  void aLateSubscriberReplaysTheGapAndItsIndexMatchesTheEngine() throws Exception {
    Map<String, String> props =
        Map.of(
            "kvtier.events.publisher", "zmq",
            "kvtier.events.endpoint", "tcp://127.0.0.1:*",
            "kvtier.events.replay-endpoint", "tcp://127.0.0.1:*",
            "kvtier.events.topic", "kv@replica-3",
            "kvtier.events.data-parallel-rank", "3",
            "kvtier.events.max-batch-events", "8");
    TreeMap<Long, byte[]> received = new TreeMap<>();
    try (KvEvents events = KvEvents.open(props, 0, "file");
        ScriptedEngine run = new ScriptedEngine(events.listener());
        ZContext zmq = new ZContext()) {
      // The replica serves a while before anyone listens: those batches reach no subscriber.
      for (int i = 0; i < 20; i++) {
        run.turn();
      }
      events.flush();
      // Those batches must have left before the subscriber connects (the publisher thread sends
      // them), or it would receive them and see no gap.
      for (int w = 0; events.stats().published() < events.stats().sealed(); w++) {
        assertThat(w).as("10 ms waits for the warm-up batches to be sent").isLessThan(1000);
        Thread.sleep(10);
      }
      // A JeroMQ 0.6.0 connection can stall before its handshake (ZmqKvEventSink says why); a short
      // handshake interval drops it and the socket reconnects, as kvtier's own sockets do.
      ZMQ.Socket sub = zmq.createSocket(SocketType.SUB);
      sub.setHandshakeIvl(ZmqKvEventSink.HANDSHAKE_MS);
      sub.connect(events.endpoint().orElseThrow());
      sub.subscribe("kv@".getBytes(StandardCharsets.UTF_8));
      sub.setReceiveTimeOut(50);
      // Serve on until the subscription has reached the publisher.
      for (int i = 0; received.isEmpty(); i++) {
        assertThat(i)
            .as("turns before the subscriber got a batch (%s)", events.stats())
            .isLessThan(400);
        run.turn();
        events.flush();
        receive(sub, received);
      }
      for (int i = 0; i < 60; i++) {
        run.turn();
      }
      events.flush();
      long last = events.stats().sealed() - 1;
      for (int i = 0; !received.containsKey(last); i++) {
        assertThat(i).as("polls for the last batch %d", last).isLessThan(400);
        receive(sub, received);
      }
      long first = received.firstKey();
      assertThat(first).as("the late subscriber's first sequence: a gap before it").isPositive();

      // The gap: ask the replay socket from sequence 0, as vLLM's subscriber does.
      ZMQ.Socket replay = zmq.createSocket(SocketType.DEALER);
      replay.setHandshakeIvl(ZmqKvEventSink.HANDSHAKE_MS);
      replay.connect(events.replayEndpoint().orElseThrow());
      replay.setReceiveTimeOut(5_000);
      replay.sendMore(new byte[0]);
      replay.send(ByteBuffer.allocate(8).putLong(0).array(), 0);
      int replayed = 0;
      while (true) {
        byte[] delimiter = replay.recv(0);
        assertThat(delimiter).as("replay reply within 5 s").isNotNull().isEmpty();
        long seq = ByteBuffer.wrap(replay.recv(0)).getLong();
        byte[] payload = replay.recv(0);
        if (seq == -1) {
          assertThat(payload).isEmpty();
          break;
        }
        received.putIfAbsent(seq, payload);
        replayed++;
      }
      assertThat(replayed).isGreaterThanOrEqualTo((int) first);
      assertThat(received.keySet()).as("no gap left").hasSize((int) last + 1);
      assertThat(events.stats().droppedBatches()).isZero();

      Index index = new Index();
      for (Map.Entry<Long, byte[]> b : received.entrySet()) {
        @SuppressWarnings("unchecked")
        List<Object> batch = (List<Object>) MsgpackReader.decode(b.getValue());
        index.apply(b.getKey(), batch);
      }

      // The engine's own view, with nothing running and every copy committed.
      RankCache cache = run.cache;
      CacheStats stats = cache.stats();
      assertThat(cache.activeRequests()).isZero();
      assertThat(cache.outstandingOperations()).isZero();
      assertThat(index.cleared).isEqualTo(1);
      assertThat(index.removed.getOrDefault("GPU", 0L))
          .as("GPU blocks removed = device evictions")
          .isEqualTo(stats.deviceEvictions())
          .isPositive();
      assertThat(index.removed.getOrDefault("CPU", 0L))
          .as("CPU blocks removed = host evictions")
          .isEqualTo(stats.hostEvictions())
          .isPositive();
      assertThat(index.held("GPU"))
          .as("GPU blocks held = device pages in use")
          .isEqualTo(cache.deviceUsage().capacity() - cache.deviceUsage().free());
      assertThat(index.held("CPU"))
          .as("CPU blocks held = host pages in use")
          .isEqualTo(cache.hostUsage().capacity() - cache.hostUsage().free());
      assertThat(stats.loadsCommitted()).as("the run loaded host hits back").isPositive();
      assertThat(index.parentLinks).as("stores below a cached parent").isPositive();
    }
  }

  private static void receive(ZMQ.Socket sub, Map<Long, byte[]> into) {
    byte[] topic;
    while ((topic = sub.recv(0)) != null) {
      assertThat(new String(topic, StandardCharsets.UTF_8)).isEqualTo("kv@replica-3");
      assertThat(sub.hasReceiveMore()).isTrue();
      byte[] seq = sub.recv(0);
      assertThat(seq).hasSize(8);
      byte[] payload = sub.recv(0);
      assertThat(sub.hasReceiveMore()).isFalse();
      into.put(ByteBuffer.wrap(seq).getLong(), payload);
    }
  }
}
