package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.asserting.FaultPlan;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.server.CompletionServer;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferDirection;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A load-back that fails inside the real rank group engine (two ranks as threads, their copies
 * through a {@link FaultyTransferEngine}) reaches the HTTP client as OpenAI's 503 {@code
 * load_failed} with the cause and a {@code Retry-After}; the pages stay on the host, so the same
 * request sent again is served from there and gives the uncached model's tokens.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServedLoadBackFailureTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void aFailedLoadBackIsA503WithTheCauseAndTheSameRequestThenSucceeds() throws Exception {
    // 16 device pages of 4 tokens and 32 host pages: a 60-token prompt pushes a 40-token one
    // out of the device to the host.
    KvTierConfig config =
        KvTierConfig.builder()
            .properties(
                SimEngines.config(
                        MODEL.config(),
                        4,
                        64,
                        2,
                        WritePolicy.WRITE_THROUGH,
                        EvictionPolicy.LRU,
                        Map.of())
                    .toProperties())
            .set(KvTierKeys.RANKS, "2")
            .build();
    List<FaultyTransferEngine> transfers = new CopyOnWriteArrayList<>();
    int[] first = IntStream.range(0, 40).map(i -> 1 + (i * 37) % 500).toArray();
    int[] second = IntStream.range(0, 60).map(i -> 2 + (i * 53) % 500).toArray();
    int[] reference = new NoCacheRunner(MODEL).generate(first, 4);

    try (RankGroupEngine engine =
            GenerationEngines.open(
                MODEL,
                config,
                EngineSettings.DEFAULTS.withGroup("served-load-back-" + System.nanoTime()),
                BackendMetrics.NOOP,
                RankSlot.Hooks.NONE.withTransfers(
                    t -> {
                      FaultyTransferEngine faulty =
                          new FaultyTransferEngine(t, FaultPlan.none(), TimeSource.SYSTEM);
                      transfers.add(faulty);
                      return faulty;
                    }));
        CompletionServer server =
            CompletionServer.start(
                engine,
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                new InetSocketAddress("127.0.0.1", 0),
                CompletionServer.Options.DEFAULTS);
        HttpClient client = HttpClient.newHttpClient()) {
      URI base = URI.create("http://127.0.0.1:" + server.address().getPort());
      assertThat(complete(client, base, first).statusCode()).isEqualTo(200);
      assertThat(complete(client, base, second).statusCode()).isEqualTo(200);
      engine.drain();
      assertThat(transfers).hasSize(2);
      // Every rank's copy fails, as a fault of the replicated pages would.
      transfers.forEach(t -> t.failNext(TransferDirection.HOST_TO_DEVICE));

      HttpResponse<String> failed = complete(client, base, first);

      assertThat(failed.statusCode()).as(failed.body()).isEqualTo(503);
      assertThat(failed.headers().firstValue("Retry-After")).hasValue("1");
      JsonNode error = JSON.readTree(failed.body()).get("error");
      assertThat(error.get("code").asText()).isEqualTo("load_failed");
      assertThat(error.get("type").asText()).isEqualTo("server_error");
      assertThat(error.get("message").asText())
          .contains("a load-back of its cached prefix from the host tier failed to copy")
          .contains("send it again");
      assertThat(transfers.get(0).count(FaultyTransferEngine.Fault.FAIL)).isEqualTo(1);

      HttpResponse<String> again = complete(client, base, first);

      assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
      JsonNode body = JSON.readTree(again.body());
      assertThat(body.at("/choices/0/token_ids").toString())
          .isEqualTo(Arrays.toString(reference).replace(" ", ""));
      assertThat(body.at("/kvtier/cached_tokens/host").asInt()).isPositive();
      assertThat(body.at("/usage/prompt_tokens_details/cached_tokens").asInt()).isPositive();
    }
  }

  private static HttpResponse<String> complete(HttpClient client, URI base, int[] prompt)
      throws Exception {
    String tokens =
        Arrays.stream(prompt).mapToObj(Integer::toString).collect(Collectors.joining(","));
    return client.send(
        HttpRequest.newBuilder(base.resolve("/v1/completions"))
            .header("Content-Type", "application/json")
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"model\": \"kvtier-tiny\", \"prompt\": ["
                        + tokens
                        + "], \"max_tokens\": 4}"))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
