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
import io.kvtier.core.rank.LoadFailurePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.server.CompletionServer;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferDirection;
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
 * Under {@code --on-load-failure fail}, a load-back that fails inside the real rank group engine (two ranks as threads, their copies
 * through a {@link FaultyTransferEngine}) reaches the HTTP client as OpenAI's 503 {@code
 * load_failed} with the cause and a {@code Retry-After}; the failed load's pages leave the cache
 * (host copy included: the ranks cannot tell a failed copy from a host page gone bad), so the
 * same request sent again is recomputed and gives the uncached model's tokens. Under the default
 * ({@code recompute}) the client gets those tokens the first time.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServedLoadBackFailureTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int[] FIRST = IntStream.range(0, 40).map(i -> 1 + (i * 37) % 500).toArray();
  private static final int[] SECOND = IntStream.range(0, 60).map(i -> 2 + (i * 53) % 500).toArray();
  private static final int[] REFERENCE = new NoCacheRunner(MODEL).generate(FIRST, 4);

  @Test
  void aFailedLoadBackIsA503WithTheCauseAndTheSameRequestThenSucceeds() throws Exception {
    withAFailedLoadBack(
        LoadFailurePolicy.FAIL,
        (engine, failed) -> {
          assertThat(failed.statusCode()).as(failed.body()).isEqualTo(503);
          assertThat(failed.headers().firstValue("Retry-After")).hasValue("1");
          JsonNode error = JSON.readTree(failed.body()).get("error");
          assertThat(error.get("code").asText()).isEqualTo("load_failed");
          assertThat(error.get("type").asText()).isEqualTo("server_error");
          assertThat(error.get("message").asText())
              .contains("a load-back of its cached prefix from the host tier failed to copy")
              .contains("send it again");
          return true;
        });
  }

  @Test
  void underTheDefaultPolicyAFailedLoadBackCostsTimeNotTheAnswer() throws Exception {
    withAFailedLoadBack(
        LoadFailurePolicy.RECOMPUTE,
        (engine, answered) -> {
          assertThat(answered.statusCode()).as(answered.body()).isEqualTo(200);
          JsonNode body = JSON.readTree(answered.body());
          assertThat(body.at("/choices/0/token_ids").toString())
              .isEqualTo(Arrays.toString(REFERENCE).replace(" ", ""));
          assertThat(body.at("/kvtier/cached_tokens/host").asInt()).isZero();
          engine.drain();
          assertThat(engine.stats().loadFailures()).isZero();
          return false;
        });
  }

  /** What the test checks of the answer to the request whose load-back failed. */
  private interface Outcome {
    /** Checks the answer; returns whether to send the request once more afterwards. */
    boolean check(RankGroupEngine engine, HttpResponse<String> answer) throws Exception;
  }

  /**
   * Serves two prompts on two ranks so that the first goes to the host, fails every rank's next
   * host-to-device copy, sends the first prompt again and hands its answer to {@code outcome};
   * then, if asked, sends it once more and checks that it is recomputed right.
   */
  private static void withAFailedLoadBack(LoadFailurePolicy policy, Outcome outcome)
      throws Exception {
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
    try (HttpServed served =
            HttpServed.open(
                MODEL,
                config,
                EngineSettings.DEFAULTS
                    .withGroup("served-load-back-" + System.nanoTime())
                    .withOnLoadFailure(policy),
                RankSlot.Hooks.NONE.withTransfers(
                    t -> {
                      FaultyTransferEngine faulty =
                          new FaultyTransferEngine(t, FaultPlan.none(), TimeSource.SYSTEM);
                      transfers.add(faulty);
                      return faulty;
                    }),
                CompletionServer.Options.DEFAULTS);
        HttpClient client = HttpClient.newHttpClient()) {
      RankGroupEngine engine = served.engine();
      URI base = served.base();
      assertThat(complete(client, base, FIRST).statusCode()).isEqualTo(200);
      assertThat(complete(client, base, SECOND).statusCode()).isEqualTo(200);
      engine.drain();
      assertThat(transfers).hasSize(2);
      // Every rank's copy fails, as a fault of the replicated pages would.
      transfers.forEach(t -> t.failNext(TransferDirection.HOST_TO_DEVICE));

      boolean again = outcome.check(engine, complete(client, base, FIRST));

      assertThat(transfers.get(0).count(FaultyTransferEngine.Fault.FAIL)).isEqualTo(1);
      if (again) {
        HttpResponse<String> retried = complete(client, base, FIRST);
        assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);
        JsonNode body = JSON.readTree(retried.body());
        assertThat(body.at("/choices/0/token_ids").toString())
            .isEqualTo(Arrays.toString(REFERENCE).replace(" ", ""));
        assertThat(body.at("/kvtier/cached_tokens/host").asInt()).isZero();
      }
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
