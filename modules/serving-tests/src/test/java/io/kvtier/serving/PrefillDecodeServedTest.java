package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.tenant.CacheNamespaces;
import io.kvtier.model.llama.LlamaServingModel;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.server.CompletionServer;
import io.kvtier.server.TransferSettings;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Prefill and decode replicas (issue 34), end to end: each replica the real rank group engine
 * behind the real HTTP server, on 1 or 2 ranks, the two sharing one L3 {@code file} store. A
 * request answered through a prefill replica and then, with its {@code kv_transfer_params}, a
 * decode replica equals a single replica's answer token for token, for the tiny transformer and
 * stories260K (from {@code ../shared}, skipped where absent); the decode replica fetches every
 * published page though its own prefetch policy is {@code best_effort} with a threshold above the
 * prompt; with the store emptied it computes the pages and still answers the same; and a handle
 * that does not fit the request or the replica is a 400 {@code invalid_kv_transfer_params}.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class PrefillDecodeServedTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final AtomicInteger GROUPS = new AtomicInteger();
  private static final TinyTransformer TINY = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final CacheNamespaces NAMESPACES =
      CacheNamespaces.of(
          "prefill-decode-secret-0123".getBytes(StandardCharsets.UTF_8), Optional.empty());

  /** A model to serve, with its served name and page size. */
  private record Served(
      ServingModel model, String name, int pageSize, int layers, int heads, int headSize) {}

  private static Served tiny() {
    ModelConfig m = TINY.config();
    return new Served(TINY, "kvtier-tiny", 4, m.layers(), m.heads(), m.headDim());
  }

  /** One replica: an engine on {@code ranks} ranks and its server. */
  private record Replica(GenerationEngine engine, CompletionServer server, URI base)
      implements AutoCloseable {
    static Replica open(
        Served served,
        int ranks,
        TransferSettings.Role role,
        Path store,
        L3PrefetchPolicy policy,
        int prefetchThreshold)
        throws IOException {
      KvTierConfigBuilder builder =
          KvTierConfig.builder()
              .device("sim")
              .host("sim")
              .collective("local")
              .ranks(ranks)
              .layout(
                  served.layers(),
                  served.heads(),
                  served.headSize(),
                  Float.BYTES,
                  served.pageSize())
              .devicePages(64)
              .hostPages(160)
              .writePolicy(WritePolicy.WRITE_THROUGH)
              .evictionPolicy(EvictionPolicy.LRU)
              .vocabSize(served.model().vocabularySize())
              .collectiveTimeout(Duration.ofSeconds(60));
      builder.set(KvTierKeys.STORE, "file");
      builder.set("file.directory", store.toString());
      builder.set(KvTierKeys.L3_MODEL_ID, served.name());
      builder.set(KvTierKeys.L3_PREFETCH_POLICY, policy.configName());
      builder.set(KvTierKeys.L3_PREFETCH_THRESHOLD, Integer.toString(prefetchThreshold));
      // No write threshold is met: only the publish writes to the store.
      builder.set(KvTierKeys.L3_BACKUP_THRESHOLD, "1000");
      KvTierConfig config = builder.build();
      HttpServed http =
          HttpServed.open(
              served.model(),
              config,
              EngineSettings.DEFAULTS.withGroup("prefill-decode-" + GROUPS.incrementAndGet()),
              RankSlot.Hooks.NONE,
              new CompletionServer.Options(
                      served.name(),
                      Optional.empty(),
                      1 << 20,
                      Duration.ofSeconds(30),
                      Duration.ofSeconds(60))
                  .withTenants(Optional.empty(), NAMESPACES)
                  .withTransfers(
                      new TransferSettings(
                          role,
                          true,
                          role.configName() + "-" + GROUPS.get(),
                          ranks,
                          config.parallelism().configName(),
                          served.pageSize(),
                          config.layout().pageBytes())));
      return new Replica(http.engine(), http.server(), http.base());
    }

    static Replica open(Served served, int ranks, TransferSettings.Role role, Path store)
        throws IOException {
      // The decode side's own policy would take nothing: best effort, a threshold past any
      // prompt. Only the handle's await fetches.
      return open(served, ranks, role, store, L3PrefetchPolicy.BEST_EFFORT, 100_000);
    }

    @Override
    public void close() {
      server.close();
      engine.close();
    }
  }

  private record Answer(int status, JsonNode body) {
    int[] tokens() {
      JsonNode ids = body.at("/choices/0/token_ids");
      int[] t = new int[ids.size()];
      for (int i = 0; i < t.length; i++) {
        t[i] = ids.get(i).asInt();
      }
      return t;
    }
  }

  private static Answer post(HttpClient client, Replica replica, String path, JsonNode body)
      throws Exception {
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(replica.base().resolve(path))
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    return new Answer(r.statusCode(), JSON.readTree(r.body()));
  }

  private static String get(HttpClient client, Replica replica, String path) throws Exception {
    return client
        .send(
            HttpRequest.newBuilder(replica.base().resolve(path)).GET().build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private static ObjectNode completion(Served served, int[] prompt, int maxTokens) {
    ObjectNode body = JSON.createObjectNode().put("model", served.name());
    ArrayNode p = body.putArray("prompt");
    Arrays.stream(prompt).forEach(p::add);
    return body.put("max_tokens", maxTokens);
  }

  private static int[] prompt(int length, int seed, int vocabulary) {
    return IntStream.range(0, length)
        .map(i -> 1 + (i * 37 + seed * 101) % (vocabulary - 1))
        .toArray();
  }

  /** The prefill request the router sends: the client's body, one token, no stream. */
  private static ObjectNode prefillBody(ObjectNode client) {
    ObjectNode body = client.deepCopy();
    body.put("max_tokens", 1).put("stream", false);
    body.putObject("kv_transfer_params").put("do_remote_decode", true);
    return body;
  }

  private static ObjectNode decodeBody(ObjectNode client, JsonNode handle) {
    ObjectNode body = client.deepCopy();
    body.set("kv_transfer_params", handle.deepCopy());
    return body;
  }

  private static void emptyStore(Path store) throws IOException {
    try (Stream<Path> files = Files.walk(store)) {
      for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
        if (!f.equals(store)) {
          Files.delete(f);
        }
      }
    }
  }

  /**
   * Through a prefill replica and a decode replica the answer is a single replica's; then again
   * with the store emptied, the pages computed on the decode replica.
   */
  private static void throughBothReplicasTheAnswerIsASingleReplicas(
      Served served, int ranks, Path tmp, int[] prompt, int maxTokens) throws Exception {
    int pages = prompt.length / served.pageSize();
    // The last prompt token is computed again on a hit: pages before it are the handle's use.
    int coverable = (prompt.length - 1) / served.pageSize();
    ObjectNode client = completion(served, prompt, maxTokens);
    Path shared = Files.createDirectories(tmp.resolve("shared"));
    int[] single;
    try (HttpClient http = HttpClient.newHttpClient()) {
      try (Replica alone =
          Replica.open(
              served,
              ranks,
              TransferSettings.Role.BOTH,
              Files.createDirectories(tmp.resolve("alone")))) {
        Answer a = post(http, alone, "/v1/completions", client);
        assertThat(a.status()).as(a.body().toString()).isEqualTo(200);
        single = a.tokens();
        assertThat(single).hasSize(maxTokens);
      }
      JsonNode handle;
      try (Replica prefill = Replica.open(served, ranks, TransferSettings.Role.PREFILL, shared)) {
        assertThat(JSON.readTree(get(http, prefill, "/health")).get("role").asText())
            .isEqualTo("prefill");
        // A prefill replica publishes whatever the request says: here the client's own body.
        Answer p = post(http, prefill, "/v1/completions", prefillBody(client));
        assertThat(p.status()).as(p.body().toString()).isEqualTo(200);
        assertThat(p.tokens()).containsExactly(single[0]);
        assertThat(p.body().at("/choices/0/finish_reason").asText()).isEqualTo("length");
        handle = p.body().get("kv_transfer_params");
        assertThat(handle.get("do_remote_prefill").asBoolean()).isTrue();
        assertThat(handle.get("ranks").asInt()).isEqualTo(ranks);
        assertThat(handle.get("page_size").asInt()).isEqualTo(served.pageSize());
        assertThat(handle.get("published_pages").asInt()).isEqualTo(pages);
        assertThat(handle.at("/prompts/0/page_hashes")).hasSize(pages);
        assertThat(p.body().at("/kvtier/transfer/pages_published").asInt()).isEqualTo(pages);
        assertThat(get(http, prefill, "/metrics"))
            .contains("kvtier_pd_transfer_pages_total{direction=\"published\"} " + pages + ".0")
            .contains("kvtier_pd_requests_total{role_side=\"prefill\"} 1.0");
      }
      try (Replica decode = Replica.open(served, ranks, TransferSettings.Role.DECODE, shared)) {
        Answer d = post(http, decode, "/v1/completions", decodeBody(client, handle));
        assertThat(d.status()).as(d.body().toString()).isEqualTo(200);
        assertThat(d.tokens()).as("through prefill and decode").containsExactly(single);
        assertThat(d.body().at("/kvtier/transfer/pages_expected").asInt()).isEqualTo(pages);
        assertThat(d.body().at("/kvtier/transfer/pages_fetched").asInt()).isEqualTo(coverable);
        assertThat(d.body().at("/kvtier/transfer/pages_recomputed").asInt()).isZero();
        assertThat(d.body().at("/kvtier/cached_tokens/l3").asInt())
            .isEqualTo(coverable * served.pageSize());
        assertThat(d.body().has("kv_transfer_params")).isFalse();
        assertThat(get(http, decode, "/metrics"))
            .contains("kvtier_pd_transfer_pages_total{direction=\"fetched\"} " + coverable + ".0")
            .contains("kvtier_pd_requests_total{role_side=\"decode\"} 1.0");

        // A handle for another prompt, another tenant's namespace, another rank count: 400s.
        int[] other = prompt.clone();
        other[1] = other[1] == 1 ? 2 : 1;
        Answer wrongPrompt =
            post(
                http,
                decode,
                "/v1/completions",
                decodeBody(completion(served, other, maxTokens), handle));
        assertInvalid(wrongPrompt, "kv_transfer_params.prompts[0].page_hashes[0]");
        ObjectNode salted = decodeBody(client, handle);
        salted.put("cache_salt", "another-tenant");
        assertInvalid(
            post(http, decode, "/v1/completions", salted),
            "kv_transfer_params.prompts[0].page_hashes[0]");
        ObjectNode otherRanks = decodeBody(client, handle);
        ((ObjectNode) otherRanks.get("kv_transfer_params")).put("ranks", ranks + 1);
        assertInvalid(
            post(http, decode, "/v1/completions", otherRanks), "kv_transfer_params.ranks");
        ObjectNode prefillHere = prefillBody(client);
        assertInvalid(
            post(http, decode, "/v1/completions", prefillHere),
            "kv_transfer_params.do_remote_decode");
      }
      // The store lost every page: the decode replica computes them and answers the same.
      emptyStore(shared);
      try (Replica decode = Replica.open(served, ranks, TransferSettings.Role.DECODE, shared)) {
        Answer d = post(http, decode, "/v1/completions", decodeBody(client, handle));
        assertThat(d.status()).as(d.body().toString()).isEqualTo(200);
        assertThat(d.tokens()).as("with the store emptied").containsExactly(single);
        assertThat(d.body().at("/kvtier/transfer/pages_fetched").asInt()).isZero();
        assertThat(d.body().at("/kvtier/transfer/pages_recomputed").asInt()).isEqualTo(coverable);
        assertThat(get(http, decode, "/metrics"))
            .contains(
                "kvtier_pd_transfer_pages_total{direction=\"recomputed\"} " + coverable + ".0");
      }
    }
  }

  private static void assertInvalid(Answer a, String param) {
    assertThat(a.status()).as(a.body().toString()).isEqualTo(400);
    assertThat(a.body().at("/error/code").asText()).isEqualTo("invalid_kv_transfer_params");
    assertThat(a.body().at("/error/param").asText()).isEqualTo(param);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void theTinyTransformerThroughPrefillAndDecodeReplicasAnswersAsOneReplica(
      int ranks, @TempDir Path tmp) throws Exception {
    throughBothReplicasTheAnswerIsASingleReplicas(
        tiny(), ranks, tmp, prompt(45, 3, TINY.config().vocabSize()), 12);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void storiesThroughPrefillAndDecodeReplicasAnswersAsOneReplica(int ranks, @TempDir Path tmp)
      throws Exception {
    Path file = SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
    try (LlamaServingModel llama =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", file.toString()))) {
      Served stories =
          new Served(llama, "stories", 8, llama.kvBlocks(), llama.kvHeads(), llama.headSize());
      throughBothReplicasTheAnswerIsASingleReplicas(
          stories, ranks, tmp, prompt(53, 5, llama.vocabularySize()), 10);
    }
  }

  @Test
  void aPageAlignedPromptComputesItsLastPageAsEveryHitDoes(@TempDir Path tmp) throws Exception {
    throughBothReplicasTheAnswerIsASingleReplicas(
        tiny(), 1, tmp, prompt(40, 9, TINY.config().vocabSize()), 6);
  }

  @Test
  void healthNamesTheRoleAndAHandleOnAPrefillReplicaIsRefused(@TempDir Path tmp) throws Exception {
    Served served = tiny();
    ObjectNode client = completion(served, prompt(20, 1, 512), 4);
    try (HttpClient http = HttpClient.newHttpClient();
        Replica both = Replica.open(served, 1, TransferSettings.Role.BOTH, tmp);
        Replica prefill = Replica.open(served, 1, TransferSettings.Role.PREFILL, tmp)) {
      assertThat(JSON.readTree(get(http, both, "/health")).get("role").asText()).isEqualTo("both");
      // A both replica serves a plain request as always, and a prefill request on asking.
      Answer plain = post(http, both, "/v1/completions", client);
      assertThat(plain.body().has("kv_transfer_params")).isFalse();
      Answer p = post(http, both, "/v1/completions", prefillBody(client));
      assertThat(p.tokens()).containsExactly(plain.tokens()[0]);
      JsonNode handle = p.body().get("kv_transfer_params");
      assertInvalid(
          post(http, prefill, "/v1/completions", decodeBody(client, handle)), "kv_transfer_params");
      // The handle decodes on the both replica itself, its pages already on the device.
      Answer d = post(http, both, "/v1/completions", decodeBody(client, handle));
      assertThat(d.tokens()).containsExactly(plain.tokens());
      assertThat(d.body().at("/kvtier/transfer/pages_recomputed").asInt()).isZero();
      // Not an object, both flags, a mangled handle.
      ObjectNode notObject = client.deepCopy().put("kv_transfer_params", "yes");
      assertInvalid(post(http, both, "/v1/completions", notObject), "kv_transfer_params");
      ObjectNode bothFlags = decodeBody(client, handle);
      ((ObjectNode) bothFlags.get("kv_transfer_params")).put("do_remote_decode", true);
      assertInvalid(post(http, both, "/v1/completions", bothFlags), "kv_transfer_params");
      ObjectNode noModel = decodeBody(client, handle);
      ((ObjectNode) noModel.get("kv_transfer_params")).remove("model");
      assertInvalid(post(http, both, "/v1/completions", noModel), "kv_transfer_params.model");
      ObjectNode pageSize = decodeBody(client, handle);
      ((ObjectNode) pageSize.get("kv_transfer_params")).put("page_size", 16);
      assertInvalid(post(http, both, "/v1/completions", pageSize), "kv_transfer_params.page_size");
      // A prompt moved between replicas answers one choice: n above 1 is refused on either side.
      for (Answer many :
          List.of(
              post(http, both, "/v1/completions", prefillBody(client).put("n", 2)),
              post(http, prefill, "/v1/completions", client.deepCopy().put("n", 2)),
              post(http, both, "/v1/completions", decodeBody(client, handle).put("n", 2)))) {
        assertThat(many.status()).as(many.body().toString()).isEqualTo(400);
        assertThat(many.body().at("/error/param").asText()).isEqualTo("n");
        assertThat(many.body().at("/error/message").asText())
            .contains("n=2 with kv_transfer_params is not supported");
      }
      // The prompt's log-probabilities need every position computed on one replica.
      for (Answer echoed :
          List.of(
              post(
                  http,
                  both,
                  "/v1/completions",
                  prefillBody(client).put("echo", true).put("logprobs", 1)),
              post(
                  http,
                  prefill,
                  "/v1/completions",
                  client.deepCopy().put("echo", true).put("logprobs", 1)))) {
        assertThat(echoed.status()).as(echoed.body().toString()).isEqualTo(400);
        assertThat(echoed.body().at("/error/param").asText()).isEqualTo("echo");
        assertThat(echoed.body().at("/error/message").asText())
            .contains("echo with logprobs and kv_transfer_params is not supported");
      }
      ObjectNode longer = decodeBody(completion(served, prompt(24, 1, 512), 4), handle);
      assertInvalid(
          post(http, both, "/v1/completions", longer),
          "kv_transfer_params.prompts[0].prompt_tokens");
    }
  }
}
