package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.server.CompletionServer;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code n} choices of one prompt through the real HTTP server and rank group engine, on one rank
 * and on two: the prompt is computed once (its primer), each choice then computes only the tail
 * shorter than a page and its own tokens; choice {@code i} is exactly what a request of one
 * choice with seed {@code seed + i} answers; and an engine without prefix caching answers the
 * same choices, each computing the whole prompt.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ParallelSamplingServedTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final AtomicInteger GROUPS = new AtomicInteger();
  private static final int PAGE = 16;
  private static final int CHOICES = 4;
  private static final int MAX_TOKENS = 8;

  /** 40 tokens: two whole pages and a tail of 8. */
  private static final int[] PROMPT = IntStream.range(0, 40).map(i -> 1 + (i * 53) % 500).toArray();

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void thePromptIsComputedOnceAndEachChoiceIsItsSeedsAnswer(int ranks) throws Exception {
    List<int[]> choices;
    try (HttpClient client = HttpClient.newHttpClient();
        Served served = Served.open(ranks, EngineSettings.DEFAULTS)) {
      long before = served.engine().stats().computedTokens();
      JsonNode body = served.complete(client, CHOICES, 100);
      long computed = served.engine().stats().computedTokens() - before;

      choices = tokens(body);
      assertThat(body.at("/usage/prompt_tokens").asInt()).as("the prompt once").isEqualTo(40);
      assertThat(body.at("/usage/completion_tokens").asInt()).isEqualTo(CHOICES * MAX_TOKENS);
      assertThat(body.at("/usage/prompt_tokens_details/cached_tokens").asInt())
          .as("a cold cache held none of it")
          .isZero();
      // Prompt tokens computed: the primer's 40, then each choice's tail of 8 (four choices that
      // each computed the prompt would take 4 x 40, as without a cache below).
      assertThat(computed)
          .as("prompt tokens computed for %d choices", CHOICES)
          .isEqualTo(40 + CHOICES * 8);
      assertThat(choices.stream().map(Arrays::toString).collect(Collectors.toSet()))
          .as("seeds 100 to 103 sample apart")
          .hasSizeGreaterThan(1);

      for (int i = 0; i < CHOICES; i++) {
        JsonNode one = served.complete(client, 1, 100 + i);
        assertThat(tokens(one).getFirst())
            .as("choice %d against a request of one choice with seed %d", i, 100 + i)
            .isEqualTo(choices.get(i));
        assertThat(one.at("/usage/prompt_tokens_details/cached_tokens").asInt())
            .as("the prompt's whole pages stayed cached")
            .isEqualTo(32);
      }
    }

    try (HttpClient client = HttpClient.newHttpClient();
        Served served = Served.open(ranks, EngineSettings.DEFAULTS.withPrefixCaching(false))) {
      long before = served.engine().stats().computedTokens();
      JsonNode body = served.complete(client, CHOICES, 100);
      long computed = served.engine().stats().computedTokens() - before;
      assertThat(tokens(body).stream().map(Arrays::toString))
          .as("the same choices without a cache")
          .containsExactlyElementsOf(choices.stream().map(Arrays::toString).toList());
      assertThat(computed).isEqualTo(CHOICES * 40);
    }
  }

  private static List<int[]> tokens(JsonNode body) {
    List<int[]> out = new ArrayList<>();
    for (JsonNode choice : body.get("choices")) {
      assertThat(choice.get("index").asInt()).isEqualTo(out.size());
      int[] ids = new int[choice.get("token_ids").size()];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = choice.get("token_ids").get(i).asInt();
      }
      out.add(ids);
    }
    return out;
  }

  /** The tiny model on 1 or 2 ranks behind the HTTP server, and its requests. */
  private record Served(HttpServed http) implements AutoCloseable {
    static Served open(int ranks, EngineSettings settings) throws Exception {
      ModelConfig m = MODEL.config();
      KvTierConfig config =
          KvTierConfig.builder()
              .device("sim")
              .host("sim")
              .collective("local")
              .ranks(ranks)
              .layout(m.layers(), m.heads(), m.headDim(), Float.BYTES, PAGE)
              .devicePages(64)
              .hostPages(128)
              .writePolicy(WritePolicy.WRITE_THROUGH)
              .evictionPolicy(EvictionPolicy.LRU)
              .vocabSize(m.vocabSize())
              .build();
      return new Served(
          HttpServed.open(
              MODEL,
              config,
              settings.withGroup("parallel-sampling-" + GROUPS.incrementAndGet()),
              RankSlot.Hooks.NONE,
              CompletionServer.Options.DEFAULTS));
    }

    RankGroupEngine engine() {
      return http.engine();
    }

    JsonNode complete(HttpClient client, int n, long seed) throws Exception {
      String prompt =
          Arrays.stream(PROMPT).mapToObj(Integer::toString).collect(Collectors.joining(","));
      HttpResponse<String> r =
          client.send(
              HttpRequest.newBuilder(http.base().resolve("/v1/completions"))
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"model\": \"kvtier-tiny\", \"prompt\": ["
                              + prompt
                              + "], \"max_tokens\": "
                              + MAX_TOKENS
                              + ", \"n\": "
                              + n
                              + ", \"temperature\": 0.9, \"seed\": "
                              + seed
                              + "}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      return JSON.readTree(r.body());
    }

    @Override
    public void close() {
      http.close();
    }
  }
}
