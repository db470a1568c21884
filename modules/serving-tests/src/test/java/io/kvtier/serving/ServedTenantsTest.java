package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.core.cache.PageHasher;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.tenant.ApiKeys;
import io.kvtier.core.tenant.CacheNamespaces;
import io.kvtier.events.KvEvents;
import io.kvtier.events.ZmqKvEventSink;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.server.CompletionServer;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Tenants end to end (issue 31 item 3): two replicas, each the real rank group engine behind the
 * real HTTP server, with tenants from a key file, a device and a host tier and one L3 {@code
 * file} store they share, and the same namespace secret. Another tenant's request for the same
 * long prompt gets no cached token from any tier, the shared store included; the same tenant's
 * does, also on the other replica; {@code cache_salt} values keep one tenant's prompts apart; the
 * shared salt shares on purpose; and the KV events name each block's namespace.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServedTenantsTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int PAGE = 4;
  private static final AtomicInteger GROUPS = new AtomicInteger();
  private static final ApiKeys KEYS =
      ApiKeys.parse("keys", List.of("sk-a alice", "sk-b bob", "sk-c carol"));
  private static final CacheNamespaces NAMESPACES =
      CacheNamespaces.of(
          "served-tenants-secret-0123".getBytes(StandardCharsets.UTF_8), Optional.of("public"));

  /** 40 tokens, distinct for each {@code n}. */
  private static int[] prompt(int n) {
    return IntStream.range(0, 40).map(i -> 1 + (n * 40 + i) % 500).toArray();
  }

  /** 16 device pages of 4 tokens and 40 host pages, write-through, an L3 file store in dir. */
  private static KvTierConfig config(Path dir, Map<String, String> extra) {
    ModelConfig m = MODEL.config();
    KvTierConfigBuilder builder =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .layout(m.layers(), m.heads(), m.headDim(), Float.BYTES, PAGE)
            .devicePages(16)
            .hostPages(40)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(m.vocabSize());
    SimEngines.l3("file", dir, L3PrefetchPolicy.WAIT_COMPLETE, PAGE).forEach(builder::set);
    extra.forEach(builder::set);
    return builder.build();
  }

  /** One replica: an engine and its server, with the tenants' keys. */
  private static HttpServed replica(KvTierConfig config) throws Exception {
    return replica(config, EngineSettings.DEFAULTS);
  }

  private static HttpServed replica(KvTierConfig config, EngineSettings settings) throws Exception {
    return HttpServed.open(
        MODEL,
        config,
        settings.withGroup("served-tenants-" + GROUPS.incrementAndGet()),
        RankSlot.Hooks.NONE,
        CompletionServer.Options.DEFAULTS.withTenants(Optional.of(KEYS), NAMESPACES));
  }

  /** The tokens of one answer's prompt that came from each tier, and the usage's sum. */
  private record Cached(int total, int device, int host, int l3) {
    int tiers() {
      return device + host + l3;
    }
  }

  private static Cached complete(
      HttpClient client, HttpServed replica, String key, int[] prompt, Optional<String> salt)
      throws Exception {
    String tokens =
        Arrays.stream(prompt).mapToObj(Integer::toString).collect(Collectors.joining(","));
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(replica.base().resolve("/v1/completions"))
                .header("Authorization", "Bearer " + key)
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"model\": \"kvtier-tiny\", \"prompt\": ["
                            + tokens
                            + "], \"max_tokens\": 4"
                            + salt.map(s -> ", \"cache_salt\": \"" + s + "\"").orElse("")
                            + "}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode body = JSON.readTree(r.body());
    // The L3 store's writes are asynchronous: let them land before the next request probes.
    replica.engine().drain();
    return new Cached(
        body.at("/usage/prompt_tokens_details/cached_tokens").asInt(),
        body.at("/kvtier/cached_tokens/device").asInt(),
        body.at("/kvtier/cached_tokens/host").asInt(),
        body.at("/kvtier/cached_tokens/l3").asInt());
  }

  private static Cached complete(HttpClient client, HttpServed replica, String key, int[] prompt)
      throws Exception {
    return complete(client, replica, key, prompt, Optional.empty());
  }

  private static void assertNone(Cached c, String what) {
    assertThat(c).as(what).isEqualTo(new Cached(0, 0, 0, 0));
  }

  @Test
  void anotherTenantNeverHitsAPrefixInAnyTierAndTheSameTenantDoesOnEitherReplica(
      @TempDir Path store) throws Exception {
    Map<String, String> events =
        Map.of(
            "kvtier.events.publisher", "zmq",
            "kvtier.events.endpoint", "tcp://127.0.0.1:*",
            "kvtier.events.replay-endpoint", "tcp://127.0.0.1:*");
    long alice = NAMESPACES.namespace("alice", Optional.empty());
    long bob = NAMESPACES.namespace("bob", Optional.empty());
    List<List<Value>> stored;
    try (HttpClient client = HttpClient.newHttpClient()) {
      try (HttpServed a = replica(config(store, events))) {
        // The device tier.
        int[] p1 = prompt(1);
        assertNone(complete(client, a, "sk-a", p1), "alice's first request");
        Cached again = complete(client, a, "sk-a", p1);
        assertThat(again.device()).as("alice again: %s", again).isPositive();
        assertThat(again.total()).isPositive();
        assertNone(complete(client, a, "sk-b", p1), "bob, while alice's prefix is on the device");

        // The host tier: another prompt pushes alice's off the device.
        int[] p2 = prompt(2);
        complete(client, a, "sk-a", p2);
        complete(client, a, "sk-c", prompt(20));
        assertNone(complete(client, a, "sk-b", p2), "bob, while alice's prefix is on the host");
        Cached host = complete(client, a, "sk-a", p2);
        assertThat(host.host()).as("alice from the host: %s", host).isPositive();

        // The L3 tier: five prompts push alice's out of the device and the host.
        int[] p3 = prompt(3);
        complete(client, a, "sk-a", p3);
        for (int n = 30; n < 35; n++) {
          complete(client, a, "sk-c", prompt(n));
        }
        assertNone(complete(client, a, "sk-b", p3), "bob, while alice's prefix is in L3");
        for (int n = 40; n < 45; n++) {
          complete(client, a, "sk-c", prompt(n));
        }
        Cached l3 = complete(client, a, "sk-a", p3);
        assertThat(l3.l3()).as("alice from L3: %s", l3).isPositive();

        stored = storedEvents(a.engine());
      }

      // Events: every block names its tenant's namespace, the same tokens hash apart per tenant.
      Map<Long, List<Long>> firstHashes = new HashMap<>();
      for (List<Value> s : stored) {
        Value lora = s.get(5);
        assertThat(lora.isNilValue())
            .as("no tenant's block is in the shared namespace: %s", s)
            .isFalse();
        long ns = lora.asIntegerValue().toBigInteger().longValue();
        if (s.get(2).isNilValue()) {
          int[] first =
              s.get(3).asArrayValue().list().stream()
                  .limit(PAGE)
                  .mapToInt(v -> v.asIntegerValue().toInt())
                  .toArray();
          long hash = s.get(1).asArrayValue().get(0).asIntegerValue().toBigInteger().longValue();
          assertThat(hash).isEqualTo(PageHasher.pageKeys(ns, first, PAGE).get(0).h0());
          firstHashes.computeIfAbsent(ns, k -> new ArrayList<>()).add(hash);
        }
      }
      long p1Alice = PageHasher.pageKeys(alice, Arrays.copyOf(prompt(1), PAGE), PAGE).get(0).h0();
      long p1Bob = PageHasher.pageKeys(bob, Arrays.copyOf(prompt(1), PAGE), PAGE).get(0).h0();
      assertThat(firstHashes.get(alice)).contains(p1Alice).doesNotContain(p1Bob);
      assertThat(firstHashes.get(bob)).contains(p1Bob).doesNotContain(p1Alice);

      // A second replica on the same L3 store, with the same secret.
      try (HttpServed b = replica(config(store, Map.of()))) {
        int[] p3 = prompt(3);
        assertNone(complete(client, b, "sk-c", p3), "carol, on the replica sharing the store");
        Cached shared = complete(client, b, "sk-a", p3);
        assertThat(shared.l3()).as("alice on the other replica: %s", shared).isPositive();

        // cache_salt: one tenant's salts are apart; the shared salt is shared on purpose.
        int[] p5 = prompt(5);
        complete(client, b, "sk-a", p5, Optional.of("s1"));
        assertNone(complete(client, b, "sk-a", p5, Optional.of("s2")), "alice, another salt");
        assertNone(complete(client, b, "sk-a", p5), "alice, no salt");
        assertThat(complete(client, b, "sk-a", p5, Optional.of("s1")).total()).isPositive();
        assertNone(complete(client, b, "sk-b", p5, Optional.of("s1")), "bob, alice's salt");
        int[] p6 = prompt(6);
        complete(client, b, "sk-a", p6, Optional.of("public"));
        Cached publicHit = complete(client, b, "sk-b", p6, Optional.of("public"));
        assertThat(publicHit.total()).as("bob in the shared namespace").isPositive();
        assertNone(complete(client, b, "sk-b", p6), "bob outside the shared namespace");
      }
    }
  }

  @Test
  void withoutPrefixCachingATenantsRepeatedPromptIsNotCachedEither(@TempDir Path store)
      throws Exception {
    try (HttpClient client = HttpClient.newHttpClient();
        HttpServed a =
            replica(config(store, Map.of()), EngineSettings.DEFAULTS.withPrefixCaching(false))) {
      for (int i = 0; i < 2; i++) {
        assertNone(complete(client, a, "sk-a", prompt(7)), "alice under --no-prefix-cache");
        assertNone(
            complete(client, a, "sk-a", prompt(7), Optional.of("public")),
            "the shared salt under --no-prefix-cache");
      }
    }
  }

  /** The BlockStored events rank 0 has published so far, from its replay socket. */
  private static List<List<Value>> storedEvents(RankGroupEngine engine) throws Exception {
    KvEvents publisher = engine.onEngineThread(slot -> (KvEvents) slot.events);
    engine.onEngineThread(
        slot -> {
          publisher.flush();
          return null;
        });
    List<List<Value>> stored = new ArrayList<>();
    try (ZContext zmq = new ZContext()) {
      // Batches reach the replay buffer once the publisher thread has taken them.
      for (int attempt = 0; attempt < 100 && stored.isEmpty(); attempt++) {
        Thread.sleep(attempt == 0 ? 0 : 20);
        ZMQ.Socket replay = zmq.createSocket(SocketType.DEALER);
        replay.setHandshakeIvl(ZmqKvEventSink.HANDSHAKE_MS);
        replay.connect(publisher.replayEndpoint().orElseThrow());
        replay.setReceiveTimeOut(5_000);
        replay.sendMore(new byte[0]);
        replay.send(ByteBuffer.allocate(8).putLong(0).array(), 0);
        while (true) {
          assertThat(replay.recv(0)).as("replay reply within 5 s").isNotNull();
          long seq = ByteBuffer.wrap(replay.recv(0)).getLong();
          byte[] payload = replay.recv(0);
          if (seq < 0) {
            break;
          }
          try (MessageUnpacker in = MessagePack.newDefaultUnpacker(payload)) {
            for (Value event : in.unpackValue().asArrayValue().get(1).asArrayValue()) {
              List<Value> fields = event.asArrayValue().list();
              if (fields.get(0).asStringValue().asString().equals("BlockStored")) {
                stored.add(fields);
              }
            }
          }
        }
        replay.close();
      }
    }
    assertThat(stored).as("BlockStored events replayed").isNotEmpty();
    return stored;
  }
}
