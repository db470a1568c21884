package io.kvtier.cli;

import static io.kvtier.cli.ReplicaProcesses.lines;
import static io.kvtier.cli.ReplicaProcesses.prompt;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.route.KvRouter;
import io.kvtier.route.RoutePolicy;
import io.kvtier.route.RouteScore;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prefill and decode replicas as two processes whose KV meets in the {@code hazelcast} L3 store,
 * each process a member of one cluster (the across-machines setting, here on loopback), behind
 * {@code kvtier route --prefill --decode}: the routed answers, whole and streamed, equal a unified
 * replica's token for token (text for the stream), and the decode replica fetched the pages the
 * prefill replica published, from the other process's member. The {@code file} store's side is
 * {@code PdRouteKillTest} (processes) and {@code PrefillDecodeServedTest} (1 and 2 ranks, a GGUF
 * model).
 */
@Timeout(300)
class PdHazelcastRouteTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private ReplicaProcesses replicas;
  private KvRouter router;

  @BeforeEach
  void start() {
    replicas = new ReplicaProcesses(dir, () -> "");
  }

  @AfterEach
  void stop() {
    if (router != null) {
      router.close();
    }
    replicas.close();
  }

  private JsonNode complete(int port, String prompt, int maxTokens) throws Exception {
    HttpResponse<String> r =
        http.send(
            ReplicaProcesses.completion(port, prompt, maxTokens, false, ""),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  /** The text of a streamed completion through the router, and its usage chunk's transfer. */
  private String streamed(String prompt, int maxTokens, JsonNode[] transfer) throws Exception {
    HttpResponse<InputStream> r =
        http.send(
            ReplicaProcesses.completion(
                router.port(),
                prompt,
                maxTokens,
                true,
                ",\"stream_options\":{\"include_usage\":true}"),
            HttpResponse.BodyHandlers.ofInputStream());
    assertThat(r.statusCode()).isEqualTo(200);
    List<String> lines;
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      lines = lines(in);
    }
    assertThat(lines).last().isEqualTo("data: [DONE]");
    StringBuilder text = new StringBuilder();
    for (String line : lines.subList(0, lines.size() - 1)) {
      assertThat(line).startsWith("data: ");
      JsonNode chunk = JSON.readTree(line.substring("data: ".length()));
      assertThat(chunk.has("error")).as(line).isFalse();
      for (JsonNode choice : chunk.path("choices")) {
        text.append(choice.path("text").asText());
      }
      if (chunk.path("kvtier").has("transfer")) {
        transfer[0] = chunk.path("kvtier").path("transfer");
      }
    }
    return text.toString();
  }

  @Test
  void routedAnswersThroughTheHazelcastStoreEqualAUnifiedReplicas() throws Exception {
    Path config = dir.resolve("hazelcast.properties");
    Files.writeString(
        config,
        "hazelcast.cluster-name=pd-"
            + UUID.randomUUID()
            + "\nhazelcast.cp-member-count=0\nhazelcast.store-backup-count=0\n");
    ReplicaProcesses.Ports unified = ReplicaProcesses.Ports.free();
    ReplicaProcesses.Ports prefill = ReplicaProcesses.Ports.free();
    ReplicaProcesses.Ports decode = ReplicaProcesses.Ports.free();
    replicas.serve("unified", unified, "--replica-id", "unified");
    for (var replica : List.of(List.of("prefill", prefill), List.of("decode", decode))) {
      String role = (String) replica.get(0);
      replicas.serve(
          role,
          (ReplicaProcesses.Ports) replica.get(1),
          "--role",
          role,
          "--l3",
          "hazelcast",
          "--config",
          config.toString(),
          "--replica-id",
          role);
    }
    router =
        KvRouter.disaggregated(
            List.of(prefill.spec()),
            List.of(decode.spec()),
            new KvRouter.Options(
                "127.0.0.1",
                0,
                16,
                RouteScore.DEFAULT,
                RoutePolicy.PREFIX,
                Optional.empty(),
                Optional.empty(),
                Duration.ofSeconds(30),
                Duration.ofSeconds(60)),
            Optional.empty());

    for (int salt = 1; salt <= 2; salt++) {
      // 200 bytes: 12 full pages of 16 tokens, all fetched (the last token is computed again).
      String prompt = prompt(salt, 200);
      JsonNode alone = complete(unified.http(), prompt, 8);
      JsonNode routed = complete(router.port(), prompt, 8);
      assertThat(routed.at("/choices/0/token_ids"))
          .as("routed through prefill and decode, prompt %d", salt)
          .isEqualTo(alone.at("/choices/0/token_ids"));
      JsonNode transfer = routed.path("kvtier").path("transfer");
      assertThat(transfer.path("pages_expected").asInt()).as(routed.toString()).isEqualTo(12);
      assertThat(transfer.path("pages_fetched").asInt()).as(routed.toString()).isEqualTo(12);
      assertThat(transfer.path("pages_recomputed").asInt()).isZero();
      assertThat(routed.at("/kvtier/cached_tokens/l3").asInt()).isEqualTo(12 * 16);
    }

    // Streamed: the text of a third prompt equals the unified replica's whole answer.
    String prompt = prompt(3, 200);
    JsonNode alone = complete(unified.http(), prompt, 8);
    JsonNode[] transfer = new JsonNode[1];
    assertThat(streamed(prompt, 8, transfer)).isEqualTo(alone.at("/choices/0/text").asText());
    assertThat(transfer[0]).as("the usage chunk's kvtier.transfer").isNotNull();
    assertThat(transfer[0].path("pages_fetched").asInt()).isEqualTo(12);
  }
}
