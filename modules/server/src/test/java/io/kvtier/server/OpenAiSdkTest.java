package io.kvtier.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.NotFoundException;
import com.openai.errors.UnauthorizedException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionTokenLogprob;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.models.Model;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.metrics.KvTierMeters;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyText;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.EngineSettings;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.GenerationEngines;
import io.kvtier.serving.ModelText;
import io.kvtier.spi.BackendMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The server as OpenAI's users call it: the official Java SDK against {@code kvtier serve}'s
 * server on the rank group engine (two ranks as threads), completions with a text prompt and with
 * token ids, chat, streaming for both, the models list, errors, and the cache's reuse reported in
 * {@code usage.prompt_tokens_details.cached_tokens}. The SDK runs from the class path (it has no
 * module descriptor; the patched test module reads the unnamed module).
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class OpenAiSdkTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final String KEY = "sdk-test-key";

  private static GenerationEngine engine;
  private static CompletionServer server;
  private static OpenAIClient client;
  private static String base;

  @BeforeAll
  static void start() throws IOException {
    ModelConfig m = MODEL.config();
    KvTierConfig config =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .ranks(2)
            .layout(m.layers(), m.heads(), m.headDim(), Float.BYTES, 4)
            .devicePages(128)
            .hostPages(512)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(m.vocabSize())
            .collectiveTimeout(Duration.ofSeconds(60))
            .build();
    engine =
        GenerationEngines.open(
            MODEL,
            config,
            EngineSettings.DEFAULTS.withGroup("openai-sdk-test-" + System.nanoTime()),
            BackendMetrics.NOOP);
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    KvTierMeters.bind(registry, engine::stats);
    server =
        CompletionServer.start(
            engine,
            registry,
            new InetSocketAddress("127.0.0.1", 0),
            CompletionServer.Options.DEFAULTS.withApiKey(Optional.of(KEY)));
    base = "http://127.0.0.1:" + server.address().getPort();
    client =
        OpenAIOkHttpClient.builder()
            .baseUrl(base + "/v1")
            .apiKey(KEY)
            .maxRetries(0)
            .timeout(Duration.ofSeconds(60))
            .build();
  }

  @AfterAll
  static void stop() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
    if (engine != null) {
      engine.close();
    }
  }

  private static String expectedText(int[] prompt, int maxTokens) {
    ModelText.Decoder decoder = TinyText.INSTANCE.decoder(prompt, false);
    StringBuilder text = new StringBuilder();
    for (int t : new NoCacheRunner(MODEL).generate(prompt, maxTokens)) {
      text.append(decoder.add(t));
    }
    return text.append(decoder.finish()).toString();
  }

  @Test
  void aTextCompletionIsTheUncachedModelsOutput() {
    Completion c =
        client
            .completions()
            .create(
                CompletionCreateParams.builder()
                    .model("kvtier-tiny")
                    .prompt("The cache is warm")
                    .maxTokens(6)
                    .temperature(0.0)
                    .build());

    assertThat(c._object_().toString()).contains("text_completion");
    assertThat(c.model()).isEqualTo("kvtier-tiny");
    assertThat(c.choices()).hasSize(1);
    assertThat(c.choices().get(0).text())
        .isEqualTo(expectedText(TinyText.INSTANCE.encode("The cache is warm"), 6));
    assertThat(c.choices().get(0).finishReason().toString()).isEqualTo("length");
    assertThat(c.usage().orElseThrow().promptTokens()).isEqualTo(17);
    assertThat(c.usage().orElseThrow().completionTokens()).isEqualTo(6);
  }

  @Test
  void aTokenIdPromptAndItsRepeatReportCachedTokens() {
    List<Long> prefix = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      prefix.add((long) ((i * 37 + 11) % 512));
    }
    List<Long> first = new ArrayList<>(prefix);
    first.add(5L);
    List<Long> second = new ArrayList<>(prefix);
    second.add(6L);

    Completion a = complete(first);
    Completion b = complete(second);

    assertThat(a.usage().orElseThrow().promptTokens()).isEqualTo(65);
    long cached =
        b.usage().orElseThrow().promptTokensDetails().orElseThrow().cachedTokens().orElseThrow();
    assertThat(cached).as("the shared 64-token prefix comes from the cache").isEqualTo(64);
    int[] prompt = second.stream().mapToInt(Long::intValue).toArray();
    assertThat(b.choices().get(0).text()).isEqualTo(expectedText(prompt, 4));
  }

  private static Completion complete(List<Long> prompt) {
    return client
        .completions()
        .create(
            CompletionCreateParams.builder()
                .model("kvtier-tiny")
                .promptOfArrayOfTokens(prompt)
                .maxTokens(4)
                .build());
  }

  @Test
  void aStreamedCompletionAddsUpToTheWholeOne() {
    CompletionCreateParams params =
        CompletionCreateParams.builder()
            .model("kvtier-tiny")
            .prompt("stream me")
            .maxTokens(8)
            .build();
    String whole = client.completions().create(params).choices().get(0).text();

    String streamed;
    try (StreamResponse<Completion> stream = client.completions().createStreaming(params)) {
      streamed =
          stream.stream()
              .flatMap(c -> c.choices().stream())
              .map(ch -> ch.text())
              .collect(Collectors.joining());
    }

    assertThat(streamed).isEqualTo(whole);
  }

  @Test
  void chatWholeAndStreamedGiveTheSameReply() {
    ChatCompletionCreateParams params =
        ChatCompletionCreateParams.builder()
            .model("kvtier-tiny")
            .addSystemMessage("You are terse.")
            .addUserMessage("Hi!")
            .maxCompletionTokens(8)
            .build();

    ChatCompletion whole = client.chat().completions().create(params);
    StringBuilder streamed = new StringBuilder();
    try (StreamResponse<ChatCompletionChunk> stream =
        client.chat().completions().createStreaming(params)) {
      stream.stream()
          .flatMap(c -> c.choices().stream())
          .forEach(ch -> ch.delta().content().ifPresent(streamed::append));
    }

    String reply = whole.choices().get(0).message().content().orElseThrow();
    assertThat(whole.model()).isEqualTo("kvtier-tiny");
    assertThat(streamed.toString()).isEqualTo(reply);
    List<ModelText.Message> messages =
        List.of(
            new ModelText.Message("system", "You are terse."),
            new ModelText.Message("user", "Hi!"));
    int[] prompt = TinyText.INSTANCE.chat(messages);
    assertThat(whole.usage().orElseThrow().promptTokens()).isEqualTo(prompt.length);
  }

  /**
   * The SDK's {@code n}: three sampled chat replies, each the reply a one-choice request with its
   * seed gives ({@code seed + index}), whole and streamed alike.
   */
  @Test
  void severalChoicesOfAChatAreEachTheirSeedsReply() {
    ChatCompletionCreateParams params =
        ChatCompletionCreateParams.builder()
            .model("kvtier-tiny")
            .addUserMessage("Tell me three things.")
            .maxCompletionTokens(6)
            .temperature(0.8)
            .seed(5)
            .n(3)
            .build();

    ChatCompletion whole = client.chat().completions().create(params);
    Map<Long, StringBuilder> streamed = new TreeMap<>();
    try (StreamResponse<ChatCompletionChunk> stream =
        client.chat().completions().createStreaming(params)) {
      stream.stream()
          .flatMap(c -> c.choices().stream())
          .forEach(
              ch ->
                  ch.delta()
                      .content()
                      .ifPresent(
                          t ->
                              streamed
                                  .computeIfAbsent(ch.index(), i -> new StringBuilder())
                                  .append(t)));
    }

    assertThat(whole.choices()).hasSize(3);
    for (int i = 0; i < 3; i++) {
      ChatCompletion.Choice choice = whole.choices().get(i);
      assertThat(choice.index()).isEqualTo(i);
      String reply = choice.message().content().orElseThrow();
      ChatCompletion one =
          client.chat().completions().create(params.toBuilder().n(1).seed(5 + i).build());
      assertThat(reply).isEqualTo(one.choices().get(0).message().content().orElseThrow());
      assertThat(streamed.get((long) i).toString()).isEqualTo(reply);
    }
    assertThat(whole.choices().stream().map(c -> c.message().content().orElseThrow()).distinct())
        .as("the choices sample apart")
        .hasSizeGreaterThan(1);
    assertThat(whole.usage().orElseThrow().completionTokens()).isEqualTo(18);
  }

  /**
   * The SDK reads a chat's log-probabilities: one per token, the greedy token the most likely of
   * its top three, the streamed entries those of the whole answer.
   */
  @Test
  void theSdkReadsAChatsLogprobs() {
    ChatCompletionCreateParams params =
        ChatCompletionCreateParams.builder()
            .model("kvtier-tiny")
            .addUserMessage("How sure are you?")
            .maxCompletionTokens(5)
            .logprobs(true)
            .topLogprobs(3)
            .build();

    ChatCompletion whole = client.chat().completions().create(params);
    List<ChatCompletionTokenLogprob> entries =
        whole.choices().get(0).logprobs().orElseThrow().content().orElseThrow();
    List<String> streamed = new ArrayList<>();
    try (StreamResponse<ChatCompletionChunk> stream =
        client.chat().completions().createStreaming(params)) {
      stream.stream()
          .flatMap(c -> c.choices().stream())
          .forEach(
              ch ->
                  ch.logprobs()
                      .flatMap(l -> l.content())
                      .ifPresent(l -> l.forEach(e -> streamed.add(e.token() + e.logprob()))));
    }

    assertThat(entries).hasSize(5);
    for (ChatCompletionTokenLogprob e : entries) {
      assertThat(e.logprob()).isLessThanOrEqualTo(0);
      assertThat(e.topLogprobs()).hasSize(3);
      assertThat(e.topLogprobs().get(0).token()).isEqualTo(e.token());
      assertThat(e.topLogprobs().get(0).logprob()).isEqualTo(e.logprob());
      assertThat(e.topLogprobs().get(1).logprob()).isLessThanOrEqualTo(e.logprob());
    }
    assertThat(streamed)
        .containsExactlyElementsOf(entries.stream().map(e -> e.token() + e.logprob()).toList());
  }

  @Test
  void theModelsListHasTheServedModel() {
    List<Model> models = client.models().list().data();

    assertThat(models).extracting(Model::id).containsExactly("kvtier-tiny");
  }

  @Test
  void anUnknownModelAndAWrongKeyAreTheSdksErrors() {
    assertThatThrownBy(
            () ->
                client
                    .completions()
                    .create(
                        CompletionCreateParams.builder()
                            .model("gpt-4o")
                            .prompt("x")
                            .maxTokens(1)
                            .build()))
        .isInstanceOfSatisfying(
            NotFoundException.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(404);
              assertThat(e.code()).hasValue("model_not_found");
              assertThat(e.param()).hasValue("model");
            });
    OpenAIClient wrong =
        OpenAIOkHttpClient.builder().baseUrl(base + "/v1").apiKey("nope").maxRetries(0).build();
    try {
      assertThatThrownBy(() -> wrong.models().list())
          .isInstanceOfSatisfying(
              UnauthorizedException.class, e -> assertThat(e.code()).hasValue("invalid_api_key"));
    } finally {
      wrong.close();
    }
  }

  /** The server's own extension: the generated ids equal the uncached reference's, token for token. */
  @Test
  void theTokenIdsEqualTheUncachedReference() throws Exception {
    int[] prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 300, 301};
    StringBuilder ids = new StringBuilder();
    for (int t : prompt) {
      ids.append(ids.isEmpty() ? "" : ",").append(t);
    }
    try (HttpClient http = HttpClient.newHttpClient()) {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                  .header("Authorization", "Bearer " + KEY)
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"model\": \"kvtier-tiny\", \"prompt\": ["
                              + ids
                              + "], \"max_tokens\": 10}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      JsonNode body = new ObjectMapper().readTree(r.body());
      int[] got = new int[10];
      for (int i = 0; i < 10; i++) {
        got[i] = body.get("choices").get(0).get("token_ids").get(i).intValue();
      }
      assertThat(got).containsExactly(new NoCacheRunner(MODEL).generate(prompt, 10));
    }
  }
}
