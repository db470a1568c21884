package io.kvtier.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.core.rank.MinTokens;
import io.kvtier.core.rank.Penalties;
import io.kvtier.core.rank.RankGroupFailedException;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.core.rank.Sampling;
import io.kvtier.core.rank.TickStep;
import io.kvtier.model.tiny.TinyText;
import io.kvtier.serving.ModelText;
import io.kvtier.serving.RequestFailedException;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The HTTP layer over real HTTP on a loopback port, with a scripted engine: OpenAI's response
 * shapes, whole and streamed; stop sequences; a precise 400 for each class of bad input; 401, 404,
 * 405, 408, 413, 429 and 503; a short body answered; the metrics scrape; a graceful close.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CompletionServerTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A Prometheus sample line: name, optional labels, a value. */
  private static final Pattern SAMPLE =
      Pattern.compile(
          "[a-zA-Z_:][a-zA-Z0-9_:]*(\\{([a-zA-Z_][a-zA-Z0-9_]*=\"(\\\\.|[^\"\\\\])*\",?)*\\})?"
              + " [-+]?([0-9.]+([eE][-+]?[0-9]+)?|NaN|Inf|\\+Inf)");

  private FakeEngine engine;
  private CompletionServer server;
  private HttpClient client;
  private URI base;

  @BeforeEach
  void start() throws IOException {
    engine = new FakeEngine();
    server = start(engine, Optional.empty());
    client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    base = URI.create("http://127.0.0.1:" + server.address().getPort());
  }

  private static CompletionServer start(FakeEngine engine, Optional<String> key)
      throws IOException {
    return CompletionServer.start(
        engine,
        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
        new InetSocketAddress("127.0.0.1", 0),
        new CompletionServer.Options(
            "kvtier-tiny", key, 4096, Duration.ofSeconds(1), Duration.ofSeconds(30)));
  }

  @AfterEach
  void stop() {
    server.close();
    engine.close();
    client.close();
  }

  private HttpResponse<String> post(String path, String body, String... headers) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(base.resolve(path)).POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).GET();
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode json(HttpResponse<String> response) throws IOException {
    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/json");
    return JSON.readTree(response.body());
  }

  /** The data of each server-sent event, in order. */
  private static List<String> events(HttpResponse<String> response) {
    assertThat(response.headers().firstValue("Content-Type"))
        .hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
    List<String> data = new ArrayList<>();
    for (String block : response.body().split("\n\n")) {
      if (!block.isBlank()) {
        assertThat(block).startsWith("data: ");
        data.add(block.substring("data: ".length()));
      }
    }
    return data;
  }

  @Test
  void anIdIsSixteenHexDigitsWithItsLeadingZeros() {
    assertThat(Completions.completionId(false, 0xbadL)).isEqualTo("cmpl-0000000000000bad");
    assertThat(Completions.completionId(true, -1L)).isEqualTo("chatcmpl-ffffffffffffffff");
  }

  @Test
  void aTextCompletionHasOpenAisShapeWithTheCacheSplit() throws Exception {
    HttpResponse<String> response =
        post(
            "/v1/completions",
            "{\"model\": \"kvtier-tiny\", \"prompt\": \"héllo\", \"max_tokens\": 5}");

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    JsonNode body = json(response);
    // 16 hex digits always, as OpenAI's ids have one length (a leading zero is kept)
    assertThat(body.get("id").asText()).matches("cmpl-[0-9a-f]{16}");
    assertThat(body.get("object").asText()).isEqualTo("text_completion");
    assertThat(body.get("model").asText()).isEqualTo("kvtier-tiny");
    assertThat(body.get("created").asLong()).isPositive();
    JsonNode choice = body.get("choices").get(0);
    assertThat(choice.get("text").asText()).isEqualTo("Hello");
    assertThat(choice.get("index").asInt()).isZero();
    assertThat(choice.get("logprobs").isNull()).isTrue();
    assertThat(choice.get("finish_reason").asText()).isEqualTo("length");
    assertThat(choice.get("token_ids").toString()).isEqualTo("[72,101,108,108,111]");
    JsonNode usage = body.get("usage");
    // "héllo" is 6 UTF-8 bytes: 6 tokens, half of them reported cached by the fake engine.
    assertThat(usage.get("prompt_tokens").asInt()).isEqualTo(6);
    assertThat(usage.get("completion_tokens").asInt()).isEqualTo(5);
    assertThat(usage.get("total_tokens").asInt()).isEqualTo(11);
    assertThat(usage.get("prompt_tokens_details").get("cached_tokens").asInt()).isEqualTo(3);
    assertThat(body.get("kvtier").get("cached_tokens").toString())
        .isEqualTo("{\"device\":3,\"host\":0,\"l3\":0}");
    assertThat(body.get("kvtier").get("matched_tokens").asInt()).isEqualTo(3);
  }

  @Test
  void tokenIdPromptsAndArraysOfPromptsGiveOneChoiceEach() throws Exception {
    JsonNode one =
        json(post("/v1/completions", "{\"model\": \"kvtier-tiny\", \"prompt\": [1, 2, 300]}"));
    assertThat(one.get("choices")).hasSize(1);
    assertThat(one.get("usage").get("completion_tokens").asInt())
        .as("OpenAI's default max_tokens")
        .isEqualTo(16);

    JsonNode many =
        json(
            post(
                "/v1/completions",
                "{\"model\": \"kvtier-tiny\", \"prompt\": [[1, 2], [3, 4, 5]], \"max_tokens\": 2}"));
    assertThat(many.get("choices")).hasSize(2);
    assertThat(many.get("choices").get(1).get("index").asInt()).isEqualTo(1);
    assertThat(many.get("usage").get("prompt_tokens").asInt()).isEqualTo(5);
    assertThat(many.get("usage").get("completion_tokens").asInt()).isEqualTo(4);
    JsonNode texts =
        json(
            post(
                "/v1/completions",
                "{\"model\": \"kvtier-tiny\", \"prompt\": [\"a\", \"b\"], \"max_tokens\": 2}"));
    assertThat(texts.get("choices")).hasSize(2);
  }

  /**
   * A stream of several prompts: each chunk carries its prompt's choice index, each choice gets
   * the text the unstreamed answer has and a finish reason of its own, the usage chunk counts
   * them all, then {@code [DONE]}. The fields that change nothing under greedy decoding ({@code
   * n} 1, {@code best_of} 1, {@code echo} false, {@code user}, {@code seed}) pass.
   */
  @Test
  void aStreamOfSeveralPromptsSendsEachChoiceUnderItsIndex() throws Exception {
    String request =
        "{\"model\": \"kvtier-tiny\", \"prompt\": [\"a\", [1, 2], \"c\"], \"max_tokens\": 4,"
            + " \"n\": 1, \"best_of\": 1, \"echo\": false, \"user\": \"user-17\", \"seed\": 3";
    JsonNode whole = json(post("/v1/completions", request + "}"));
    HttpResponse<String> streamed =
        post(
            "/v1/completions",
            request + ", \"stream\": true, \"stream_options\": {\"include_usage\": true}}");

    assertThat(streamed.statusCode()).as(streamed.body()).isEqualTo(200);
    List<String> events = events(streamed);
    assertThat(events.getLast()).isEqualTo("[DONE]");
    java.util.Map<Integer, StringBuilder> texts = new java.util.TreeMap<>();
    java.util.Map<Integer, String> finishes = new java.util.TreeMap<>();
    JsonNode usage = null;
    for (String e : events.subList(0, events.size() - 1)) {
      JsonNode chunk = JSON.readTree(e);
      if (chunk.get("choices").isEmpty()) {
        usage = chunk.get("usage");
        continue;
      }
      for (JsonNode choice : chunk.get("choices")) {
        int index = choice.get("index").asInt();
        texts.computeIfAbsent(index, i -> new StringBuilder()).append(choice.get("text").asText());
        if (!choice.get("finish_reason").isNull()) {
          assertThat(finishes.put(index, choice.get("finish_reason").asText()))
              .as("one finish reason per choice")
              .isNull();
        }
      }
    }
    assertThat(texts.keySet()).containsExactly(0, 1, 2);
    assertThat(finishes.keySet()).containsExactly(0, 1, 2);
    for (int i = 0; i < 3; i++) {
      JsonNode choice = whole.get("choices").get(i);
      assertThat(choice.get("index").asInt()).isEqualTo(i);
      assertThat(texts.get(i).toString()).isEqualTo(choice.get("text").asText());
      assertThat(finishes.get(i)).isEqualTo(choice.get("finish_reason").asText());
    }
    assertThat(usage).isNotNull();
    assertThat(usage.get("completion_tokens").asInt()).isEqualTo(12);
    assertThat(usage.get("prompt_tokens").asInt()).isEqualTo(4);
    assertThat(usage.get("completion_tokens").asInt())
        .isEqualTo(whole.get("usage").get("completion_tokens").asInt());
  }

  @Test
  void aStreamedCompletionSendsTheSameTextInChunksThenDone() throws Exception {
    HttpResponse<String> response =
        post(
            "/v1/completions",
            "{\"model\": \"kvtier-tiny\", \"prompt\": \"x\", \"max_tokens\": 13, \"stream\": true,"
                + " \"stream_options\": {\"include_usage\": true}}");

    assertThat(response.statusCode()).isEqualTo(200);
    List<String> events = events(response);
    assertThat(events.getLast()).isEqualTo("[DONE]");
    StringBuilder text = new StringBuilder();
    String finish = null;
    JsonNode usage = null;
    for (String e : events.subList(0, events.size() - 1)) {
      JsonNode chunk = JSON.readTree(e);
      assertThat(chunk.get("object").asText()).isEqualTo("text_completion");
      if (chunk.get("choices").isEmpty()) {
        usage = chunk.get("usage");
        continue;
      }
      JsonNode choice = chunk.get("choices").get(0);
      text.append(choice.get("text").asText());
      if (!choice.get("finish_reason").isNull()) {
        finish = choice.get("finish_reason").asText();
      }
    }
    assertThat(text.toString()).isEqualTo("Hello, world!");
    assertThat(finish).isEqualTo("length");
    assertThat(usage.get("completion_tokens").asInt()).isEqualTo(13);
  }

  @Test
  void aChatReplyEndsAtTheEndMarkerWithFinishReasonStop() throws Exception {
    engine.script.set(new int[] {'O', 'k', TinyText.END, 'z', 'z'});
    String body =
        "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"system\", \"content\": \"Be"
            + " brief.\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\":"
            + " \"Hi\"}]}], \"max_completion_tokens\": 5";

    JsonNode whole = json(post("/v1/chat/completions", body + "}"));
    HttpResponse<String> streamed = post("/v1/chat/completions", body + ", \"stream\": true}");

    assertThat(whole.get("object").asText()).isEqualTo("chat.completion");
    assertThat(whole.get("id").asText()).matches("chatcmpl-[0-9a-f]{16}");
    JsonNode choice = whole.get("choices").get(0);
    assertThat(choice.get("message").get("role").asText()).isEqualTo("assistant");
    assertThat(choice.get("message").get("content").asText()).isEqualTo("Ok");
    assertThat(choice.get("finish_reason").asText()).isEqualTo("stop");
    // <|system|>"Be brief."<|end|><|user|>"Hi"<|end|><|assistant|>: 9 + 2 + 5 markers.
    assertThat(whole.get("usage").get("prompt_tokens").asInt()).isEqualTo(16);
    assertThat(whole.get("usage").get("completion_tokens").asInt()).isEqualTo(3);

    List<String> events = events(streamed);
    assertThat(events.getLast()).isEqualTo("[DONE]");
    JsonNode first = JSON.readTree(events.getFirst());
    assertThat(first.get("object").asText()).isEqualTo("chat.completion.chunk");
    assertThat(first.get("choices").get(0).get("delta").get("role").asText())
        .isEqualTo("assistant");
    StringBuilder text = new StringBuilder();
    String finish = null;
    for (String e : events.subList(0, events.size() - 1)) {
      JsonNode c = JSON.readTree(e).get("choices").get(0);
      if (c.get("delta").has("content")) {
        text.append(c.get("delta").get("content").asText());
      }
      if (!c.get("finish_reason").isNull()) {
        finish = c.get("finish_reason").asText();
      }
    }
    assertThat(text.toString()).isEqualTo("Ok");
    assertThat(finish).isEqualTo("stop");
    assertThat(choice.get("stop_reason").isNull()).as("the model's end token").isTrue();
    assertThat(engine.cancelled.get()).as("each reply cancelled at <|end|>").isEqualTo(2);
  }

  @Test
  void aStopSequenceCutsTheTextAndCancelsTheGeneration() throws Exception {
    String body =
        "{\"model\": \"kvtier-tiny\", \"prompt\": \"x\", \"max_tokens\": 13, \"stop\": [\"o, w\","
            + " \"zz\"]";

    JsonNode whole = json(post("/v1/completions", body + "}"));
    List<String> events = events(post("/v1/completions", body + ", \"stream\": true}"));

    assertThat(whole.get("choices").get(0).get("text").asText()).isEqualTo("Hell");
    assertThat(whole.get("choices").get(0).get("finish_reason").asText()).isEqualTo("stop");
    assertThat(whole.get("usage").get("completion_tokens").asInt())
        .as("the 8th token, w, completes the stop sequence")
        .isEqualTo(8);
    assertThat(streamedText(events))
        .as("no piece of the stop sequence is ever sent")
        .isEqualTo("Hell");
    assertThat(engine.cancelled.get()).isEqualTo(2);
  }

  /**
   * vLLM's {@code stop_token_ids} end a choice after the stop token's own text, its {@code
   * include_stop_str_in_output} keeps a stop sequence at the end, and its {@code min_tokens} lets
   * nothing end a choice before that many tokens: a stop token id or a stop
   * sequence that completes earlier is text like any other (a stop sequence that completes at or
   * after it still ends the choice, though it began earlier).
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      stop at ','              | "stop_token_ids": [44]                    | Hello,        | stop   | 6  | 44
      not before min_tokens    | "stop_token_ids": [108], "min_tokens": 7  | Hello, worl   | stop   | 11 | 108
      min_tokens, no stop      | "min_tokens": 13                          | Hello, world! | length | 13 |
      stop string too early    | "stop": ["ll"], "min_tokens": 5           | Hello, world! | length | 13 |
      stop string completes at | "stop": ["lo,"], "min_tokens": 6          | Hel           | stop   | 6  | "lo,"
      stop string before min   | "stop": ["lo,"], "min_tokens": 7          | Hello, world! | length | 13 |
      stop string kept         | "stop": ["o, w"], "include_stop_str_in_output": true | Hello, w | stop | 8 | "o, w"
      """)
  void stopTokenIdsEndAChoiceAndNothingEndsItBeforeMinTokens(
      String name, String fields, String text, String finish, int tokens, String stopReason)
      throws Exception {
    String body = "{\"model\": \"kvtier-tiny\", \"prompt\": \"x\", \"max_tokens\": 13, " + fields;

    JsonNode whole = json(post("/v1/completions", body + "}"));
    List<String> events = events(post("/v1/completions", body + ", \"stream\": true}"));

    JsonNode choice = whole.get("choices").get(0);
    assertThat(choice.get("text").asText()).isEqualTo(text);
    assertThat(choice.get("finish_reason").asText()).isEqualTo(finish);
    assertThat(whole.get("usage").get("completion_tokens").asInt()).isEqualTo(tokens);
    // vLLM's stop_reason: the stop token id or sequence, null at the budget.
    JsonNode reason = stopReason == null ? JSON.nullNode() : JSON.readTree(stopReason);
    assertThat(choice.get("stop_reason")).isEqualTo(reason);
    assertThat(streamedText(events)).isEqualTo(text);
    JsonNode last = JSON.readTree(events.get(events.size() - 2)).get("choices").get(0);
    assertThat(last.get("finish_reason").asText()).isEqualTo(finish);
    assertThat(last.get("stop_reason")).isEqualTo(reason);
  }

  /** A streamed completion's text: its chunks' first choice's pieces, up to {@code [DONE]}. */
  private static String streamedText(List<String> events) throws IOException {
    StringBuilder text = new StringBuilder();
    for (String e : events.subList(0, events.size() - 1)) {
      text.append(JSON.readTree(e).get("choices").get(0).get("text").asText());
    }
    return text.toString();
  }

  /**
   * OpenAI's {@code echo}: the choice's text starts with the prompt (as its tokens decode; a stop
   * sequence in the prompt ends nothing), whole and streamed (the prompt first, in its own chunk).
   */
  @Test
  void echoPutsThePromptBeforeTheChoicesText() throws Exception {
    String body =
        "{\"model\": \"kvtier-tiny\", \"prompt\": [72, 105], \"max_tokens\": 5, \"echo\":"
            + " true, \"stop\": [\"Hi\"]";

    JsonNode whole = json(post("/v1/completions", body + "}"));
    List<String> events = events(post("/v1/completions", body + ", \"stream\": true}"));

    assertThat(whole.get("choices").get(0).get("text").asText()).isEqualTo("HiHello");
    assertThat(whole.get("usage").get("completion_tokens").asInt()).isEqualTo(5);
    assertThat(JSON.readTree(events.getFirst()).get("choices").get(0).get("text").asText())
        .as("the prompt's own chunk")
        .isEqualTo("Hi");
    assertThat(streamedText(events)).isEqualTo("HiHello");
    assertThat(engine.samplings).containsOnly(Sampling.GREEDY);
  }

  /**
   * {@code echo} with {@code logprobs} (how lm-evaluation-harness scores a continuation): the
   * request asks the engine for its prompt's log-probabilities, and the answer's {@code tokens}
   * start with the prompt's, the first with null log-probabilities (no position predicts it), the
   * text offsets running on through the choice's tokens; streamed, the prompt's entries come in
   * its chunk.
   */
  @Test
  void echoWithLogprobsReportsThePromptsTokensFirst() throws Exception {
    String body =
        "{\"model\": \"kvtier-tiny\", \"prompt\": [72, 105], \"max_tokens\": 3, \"echo\":"
            + " true, \"logprobs\": 1";

    JsonNode whole = json(post("/v1/completions", body + "}"));
    List<String> events = events(post("/v1/completions", body + ", \"stream\": true}"));

    JsonNode choice = whole.get("choices").get(0);
    assertThat(choice.get("text").asText()).isEqualTo("HiHel");
    JsonNode lp = choice.get("logprobs");
    assertThat(lp.get("tokens"))
        .containsExactly(
            JSON.getNodeFactory().textNode("H"),
            JSON.getNodeFactory().textNode("i"),
            JSON.getNodeFactory().textNode("H"),
            JSON.getNodeFactory().textNode("e"),
            JSON.getNodeFactory().textNode("l"));
    assertThat(lp.get("token_logprobs").get(0).isNull()).isTrue();
    assertThat(lp.get("token_logprobs").get(1).floatValue()).isEqualTo(-0.1f);
    assertThat(lp.get("token_logprobs").get(2).floatValue()).isEqualTo(-0.25f);
    assertThat(lp.get("top_logprobs").get(0).isNull()).isTrue();
    assertThat(lp.get("top_logprobs").get(1).has("i")).as("its top list").isTrue();
    assertThat(lp.get("text_offset").toString()).isEqualTo("[0,1,2,3,4]");
    assertThat(engine.samplings)
        .containsOnly(Sampling.GREEDY.withLogprobs(1).withPromptLogprobs(true));
    JsonNode first = JSON.readTree(events.getFirst()).get("choices").get(0);
    assertThat(first.get("text").asText()).isEqualTo("Hi");
    assertThat(first.get("logprobs").get("tokens").toString()).isEqualTo("[\"H\",\"i\"]");
    StringBuilder offsets = new StringBuilder();
    for (String e : events.subList(0, events.size() - 1)) {
      JsonNode c = JSON.readTree(e).get("choices").get(0);
      if (c.get("logprobs").isObject()) {
        offsets.append(c.get("logprobs").get("text_offset"));
      }
    }
    assertThat(offsets.toString()).as("the last chunk has none left").isEqualTo("[0,1][2][3][4][]");
  }

  /**
   * {@code echo} with {@code max_tokens} 0 (OpenAI allows it; HELM-style harnesses send it to score
   * a text): the answer is the prompt alone, with its log-probabilities where asked, no completion
   * token counted or shown, whole and streamed.
   */
  @Test
  void echoWithNoTokensAnswersThePromptAlone() throws Exception {
    String body =
        "{\"model\": \"kvtier-tiny\", \"prompt\": [72, 105], \"max_tokens\": 0, \"echo\":"
            + " true, \"logprobs\": 0";

    JsonNode whole = json(post("/v1/completions", body + "}"));
    List<String> events = events(post("/v1/completions", body + ", \"stream\": true}"));

    JsonNode choice = whole.get("choices").get(0);
    assertThat(choice.get("text").asText()).isEqualTo("Hi");
    assertThat(choice.get("finish_reason").asText()).isEqualTo("length");
    assertThat(choice.get("token_ids")).isEmpty();
    assertThat(choice.get("logprobs").get("tokens").toString()).isEqualTo("[\"H\",\"i\"]");
    assertThat(choice.get("logprobs").get("token_logprobs").toString()).isEqualTo("[null,-0.1]");
    assertThat(whole.get("usage").get("completion_tokens").asInt()).isZero();
    assertThat(streamedText(events)).isEqualTo("Hi");
    assertThat(engine.log)
        .filteredOn("submit 1"::equals)
        .as("one token asked of the engine")
        .hasSize(2);
    HttpResponse<String> plain =
        post(
            "/v1/completions",
            "{\"model\": \"kvtier-tiny\", \"prompt\": [72, 105], \"max_tokens\": 0, \"echo\":"
                + " true}");
    assertThat(json(plain).get("choices").get(0).get("text").asText()).isEqualTo("Hi");
  }

  /**
   * The tokens {@code min_tokens} holds back reach the engine in the request's sampling: the
   * stop token ids and the endpoint's end tokens (a chat's {@code <|end|>}; none of a tiny
   * completion), less the end tokens where {@code ignore_eos} makes them end nothing.
   */
  @Test
  void minTokensHoldsBackTheStopTokenIdsAndTheEndTokens() throws Exception {
    String chat =
        "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
            + " \"x\"}], \"min_tokens\": 2, \"stop_token_ids\": [9, 4, 9]";
    assertThat(post("/v1/chat/completions", chat + "}").statusCode()).isEqualTo(200);
    assertThat(post("/v1/chat/completions", chat + ", \"ignore_eos\": true}").statusCode())
        .isEqualTo(200);
    assertThat(
            post(
                    "/v1/completions",
                    "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"min_tokens\": 3}")
                .statusCode())
        .isEqualTo(200);
    assertThat(
            post(
                    "/v1/completions",
                    "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"stop_token_ids\": [3]}")
                .statusCode())
        .isEqualTo(200);
    assertThat(engine.samplings)
        .containsExactly(
            Sampling.GREEDY.withMinTokens(MinTokens.of(2, List.of(4, 9, TinyText.END))),
            Sampling.GREEDY.withMinTokens(MinTokens.of(2, List.of(4, 9))),
            Sampling.GREEDY,
            Sampling.GREEDY);
  }

  /** Too many stop token ids, or ones that hold back the whole vocabulary, are a 400. */
  @Test
  void stopTokenIdsAreBoundedAndCannotHoldBackTheWholeVocabulary() throws Exception {
    String many =
        java.util.stream.IntStream.range(0, 1025)
            .mapToObj(i -> Integer.toString(i % 10))
            .collect(java.util.stream.Collectors.joining(","));
    HttpResponse<String> tooMany =
        post(
            "/v1/completions",
            "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"stop_token_ids\": [" + many + "]}");
    assertThat(tooMany.statusCode()).isEqualTo(400);
    assertThat(json(tooMany).get("error").get("message").asText())
        .contains("stop_token_ids has 1025 ids: give at most 1024");
    String all =
        java.util.stream.IntStream.range(0, 512)
            .mapToObj(Integer::toString)
            .collect(java.util.stream.Collectors.joining(", "));
    HttpResponse<String> every =
        post(
            "/v1/completions",
            "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"min_tokens\": 1,"
                + " \"stop_token_ids\": ["
                + all
                + "]}");
    assertThat(every.statusCode()).isEqualTo(400);
    JsonNode error = json(every).get("error");
    assertThat(error.get("param").asText()).isEqualTo("stop_token_ids");
    assertThat(error.get("message").asText())
        .contains("hold back every token of the vocabulary: nothing could be generated");
    assertThat(
            post(
                    "/v1/completions",
                    "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"stop_token_ids\": ["
                        + all
                        + "]}")
                .statusCode())
        .as("without min_tokens nothing is held back")
        .isEqualTo(200);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      not JSON        | /v1/completions | {"model": "kvtier-tiny"                         | | not valid JSON at offset
      duplicate key   | /v1/completions | {"model": "kvtier-tiny", "model": "x"}          | | Duplicate field 'model'
      trailing data   | /v1/completions | {"model": "kvtier-tiny", "prompt": "a"} {}      | | not valid JSON at offset
      leading zero    | /v1/completions | {"model": "kvtier-tiny", "prompt": [01]}        | | not valid JSON at offset
      NaN             | /v1/completions | {"model": "kvtier-tiny", "prompt": [NaN]}       | | not valid JSON at offset
      single quotes   | /v1/completions | {'model': 'kvtier-tiny'}                        | | not valid JSON at offset
      deep nesting    | /v1/completions | [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] | | nesting depth
      not an object   | /v1/completions | [1, 2, 3]                                       | | must be a JSON object
      no model        | /v1/completions | {"prompt": "a"}                                 | model | missing field model
      no prompt       | /v1/completions | {"model": "kvtier-tiny"}                        | prompt | missing field prompt
      prompt a number | /v1/completions | {"model": "kvtier-tiny", "prompt": 7}           | prompt | prompt must be a string
      token a decimal | /v1/completions | {"model": "kvtier-tiny", "prompt": [1, 2.5]}    | prompt[1] | prompt[1] must be an integer
      token a string  | /v1/completions | {"model": "kvtier-tiny", "prompt": [1, "7"]}    | prompt[1] | prompt[1] must be an integer
      mixed prompts   | /v1/completions | {"model": "kvtier-tiny", "prompt": ["a", 7]}    | prompt[1] | prompt[1] must be a string or
      empty prompt    | /v1/completions | {"model": "kvtier-tiny", "prompt": []}          | prompt | prompt is empty
      empty string    | /v1/completions | {"model": "kvtier-tiny", "prompt": ""}          | prompt | prompt is empty
      token 512       | /v1/completions | {"model": "kvtier-tiny", "prompt": [1, 512]}    | prompt | prompt[1]=512 is outside the vocab
      negative token  | /v1/completions | {"model": "kvtier-tiny", "prompt": [-1]}        | prompt | prompt[0]=-1 is outside the vocab
      huge token      | /v1/completions | {"model": "kvtier-tiny", "prompt": [99999999999]} | prompt[0] | out of range
      huge number     | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "max_tokens": 99999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999} | | Number value length
      max_tokens 0    | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "max_tokens": 0}   | max_tokens | max_tokens=0 must be at least 1
      max_tokens str  | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "max_tokens": "3"} | max_tokens | max_tokens must be an integer
      too long        | /v1/completions | {"model": "kvtier-tiny", "prompt": [1, 2, 3], "max_tokens": 254} | max_tokens | the context limit of 256
      unknown field   | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "max_token": 3}    | max_token | unknown field "max_token"
      temperature 3   | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "temperature": 3}  | temperature | temperature=3 is out of range: give 0 (greedy, the default) to 2
      temperature -1  | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "temperature": -1} | temperature | temperature=-1 is out of range
      temperature str | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "temperature": "hot"} | temperature | temperature must be a number
      top_p 0         | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "top_p": 0}        | top_p | top_p=0 is out of range
      top_p 1.5       | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "top_p": 1.5}      | top_p | top_p=1.5 is out of range
      top_k -2        | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "top_k": -2}       | top_k | top_k=-2 is out of range
      top_k 1.5       | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "top_k": 1.5}      | top_k | top_k must be an integer
      seed 1.5        | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "seed": 1.5}       | seed | seed must be an integer
      seed too big    | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "seed": 99999999999999999999} | seed | seed=99999999999999999999 is out of range
      presence 2.5    | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "presence_penalty": 2.5} | presence_penalty | presence_penalty=2.5 is out of range: give -2 to 2
      frequency -3    | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "frequency_penalty": -3} | frequency_penalty | frequency_penalty=-3 is out of range
      repetition 0    | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "repetition_penalty": 0} | repetition_penalty | repetition_penalty=0 is out of range: give more than 0 and at most 10
      repetition str  | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "repetition_penalty": "1.1"} | repetition_penalty | repetition_penalty must be a number
      n 0             | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "n": 0}            | n | n=0 is out of range: give 1 (the default) to 128
      n 129           | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "n": 129} | n | n=129 is out of range
      n a string      | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "n": "2"}          | n | n must be an integer
      best_of above n | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "n": 2, "best_of": 3} | best_of | best_of=3 with n=2 is not supported: kvtier serve does not rank choices
      best_of alone   | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "best_of": 2}      | best_of | best_of=2 with n=1 is not supported
      logprobs 21     | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "logprobs": 21}    | logprobs | logprobs=21 is out of range: give 0 (the chosen token's log-probability only) to 20
      logprobs -1     | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "logprobs": -1}    | logprobs | logprobs=-1 is out of range
      logprobs true   | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "logprobs": true}  | logprobs | logprobs must be an integer
      top alone       | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 2} | top_logprobs | top_logprobs=2 needs logprobs: true
      top 21          | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21} | top_logprobs | top_logprobs=21 is out of range
      chat logprobs 2 | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "logprobs": 2} | logprobs | logprobs must be true or false
      bias a list     | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "logit_bias": [1]} | logit_bias | logit_bias must be an object from token ids to biases
      bias a word     | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "logit_bias": {"yes": 5}} | logit_bias.yes | logit_bias.yes: the key must be a token id
      bias 200        | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"7": 200}} | logit_bias.7 | logit_bias.7 must be a number from -100 to 100
      bias token 512  | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "logit_bias": {"512": 5}} | logit_bias.512 | logit_bias.512 is outside the vocabulary [0, 512)
      suffix          | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "suffix": "x"}     | suffix | suffix is not supported
      chat top_k      | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "temperature": 1, "top_k": -5} | top_k | top_k=-5 is out of range
      echo a string   | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "echo": "yes"}     | echo | echo must be true or false
      stream a string | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "stream": "yes"}   | stream | stream must be true or false
      include_stop 1  | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "include_stop_str_in_output": 1} | include_stop_str_in_output | include_stop_str_in_output must be true or false
      ignore_eos 1    | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "ignore_eos": 1}   | ignore_eos | ignore_eos must be true or false
      chat ignore_eos | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "ignore_eos": "true"} | ignore_eos | ignore_eos must be true or false
      stop ids a number | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "stop_token_ids": 7} | stop_token_ids | stop_token_ids must be an array of token ids, like [2], not 7
      stop id -1      | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "stop_token_ids": [3, -1]} | stop_token_ids[1] | stop_token_ids[1]=-1 is not a token id: give a non-negative integer
      stop id a word  | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "stop_token_ids": ["7"]} | stop_token_ids[0] | stop_token_ids[0] must be an integer
      stop id 512     | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "stop_token_ids": [512]} | stop_token_ids | stop_token_ids holds 512, outside the vocabulary [0, 512)
      echo, 0, min    | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "echo": true, "max_tokens": 0, "min_tokens": 1} | min_tokens | min_tokens=1 is more than max_tokens=0
      max_tokens 0, no echo | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "max_tokens": 0, "echo": false} | max_tokens | max_tokens=0 must be at least 1 (0 only with echo
      min_tokens -1   | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "min_tokens": -1} | min_tokens | min_tokens=-1 must be at least 0 (0, the default, is none)
      min_tokens str  | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "min_tokens": "2"} | min_tokens | min_tokens must be an integer
      min over max    | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "max_tokens": 4, "min_tokens": 5} | min_tokens | min_tokens=5 is more than max_tokens=4: give at most as many as the choice may generate
      min over default | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "min_tokens": 17} | min_tokens | min_tokens=17 is more than max_tokens=16
      chat min over max | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 3, "min_tokens": 4} | min_tokens | min_tokens=4 is more than max_completion_tokens=3
      five stops      | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "stop": ["a","b","c","d","e"]} | stop | at most 4
      stream_options  | /v1/completions | {"model": "kvtier-tiny", "prompt": [1], "stream_options": {"x": 1}} | stream_options.x | unknown field "stream_options.x"
      no messages     | /v1/chat/completions | {"model": "kvtier-tiny"}                    | messages | missing field messages
      empty messages  | /v1/chat/completions | {"model": "kvtier-tiny", "messages": []}    | messages | non-empty array
      tool role       | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "tool", "content": "x"}]} | messages[0].role | messages[0].role=tool is not supported
      no content      | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user"}]} | messages[0].content | missing field messages[0].content
      image part      | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]} | messages[0].content[0].type | is not supported
      tools           | /v1/chat/completions | {"model": "kvtier-tiny", "messages": [{"role": "user", "content": "x"}], "tools": [{}]} | tools | tools is not supported
      """)
  void eachClassOfBadInputIsA400NamingTheField(
      String name, String path, String body, String param, String message) throws Exception {
    HttpResponse<String> response = post(path, body);

    assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
    JsonNode error = json(response).get("error");
    assertThat(error.get("type").asText()).isEqualTo("invalid_request_error");
    assertThat(error.get("message").asText()).contains(message);
    if (param == null) {
      assertThat(error.get("param").isNull()).as(response.body()).isTrue();
    } else {
      assertThat(error.get("param").asText()).isEqualTo(param);
    }
    assertThat(error.has("code")).isTrue();
    // The server still serves: a bad request never breaks it.
    assertThat(
            post("/v1/completions", "{\"model\": \"kvtier-tiny\", \"prompt\": \"ok\"}")
                .statusCode())
        .isEqualTo(200);
  }

  @Test
  void theSamplingFieldsReachTheEngineAndEachPromptDrawsWithItsOwnSeed() throws Exception {
    assertThat(
            post(
                    "/v1/completions",
                    "{\"model\": \"kvtier-tiny\", \"prompt\": [\"a\", \"a\"], \"temperature\":"
                        + " 0.8, \"top_p\": 0.9, \"top_k\": 40, \"seed\": -7}")
                .statusCode())
        .isEqualTo(200);
    assertThat(engine.samplings)
        .containsExactly(new Sampling(0.8f, 0.9f, 40, -7), new Sampling(0.8f, 0.9f, 40, -6));
    engine.samplings.clear();

    // Penalties reach the engine, greedy or sampled.
    post(
        "/v1/completions",
        "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"presence_penalty\": 0.5,"
            + " \"frequency_penalty\": -1, \"repetition_penalty\": 1.2}");
    post(
        "/v1/chat/completions",
        "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}],"
            + " \"temperature\": 1, \"seed\": 4, \"frequency_penalty\": 2, \"logit_bias\":"
            + " {\"72\": -100, \"7\": 2.5}}");
    assertThat(engine.samplings)
        .containsExactly(
            Sampling.GREEDY.withPenalties(new Penalties(0.5f, -1, 1.2f)),
            new Sampling(1, 1, 0, 4)
                .withPenalties(new Penalties(0, 2, 1))
                .withLogitBias(
                    io.kvtier.core.rank.LogitBias.of(java.util.Map.of(72, -100f, 7, 2.5f))));
    engine.samplings.clear();

    // No temperature (or 0) is greedy whatever else is sent; top_k -1 and 0 keep every token.
    post("/v1/completions", "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"top_p\": 0.5}");
    post(
        "/v1/chat/completions",
        "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
            + " \"x\"}], \"temperature\": 0, \"seed\": 3}");
    post(
        "/v1/chat/completions",
        "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
            + " \"x\"}], \"temperature\": 2, \"top_k\": -1, \"seed\": 3}");
    assertThat(engine.samplings)
        .containsExactly(Sampling.GREEDY, Sampling.GREEDY, new Sampling(2f, 1f, 0, 3));
    engine.samplings.clear();

    // Without a seed the server draws one, so that every rank still draws alike.
    post("/v1/completions", "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"temperature\": 1}");
    post("/v1/completions", "{\"model\": \"kvtier-tiny\", \"prompt\": [1], \"temperature\": 1}");
    Sampling[] drawn = engine.samplings.toArray(Sampling[]::new);
    assertThat(drawn).hasSize(2);
    assertThat(drawn[0].temperature()).isEqualTo(1f);
    assertThat(drawn[0].seed()).isNotEqualTo(drawn[1].seed());
  }

  /**
   * {@code n} choices per prompt on an engine that caches prefixes: each prompt's one-token greedy
   * primer runs and ends first, then its choices start, choice {@code i} of prompt {@code i / n}
   * drawing with {@code seed + i}; the usage counts each prompt, and its cached tokens, once.
   */
  @Test
  void nChoicesStartAfterTheirPromptsPrimerAndDrawWithTheirOwnSeeds() throws Exception {
    engine.cachesPrefixes = true;
    HttpResponse<String> response =
        post(
            "/v1/completions",
            "{\"model\": \"kvtier-tiny\", \"prompt\": [\"abcd\", \"efghij\"], \"n\": 2,"
                + " \"best_of\": 2, \"max_tokens\": 3, \"temperature\": 0.5, \"seed\": 10}");

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    JsonNode body = json(response);
    assertThat(body.get("choices")).hasSize(4);
    for (int i = 0; i < 4; i++) {
      JsonNode choice = body.get("choices").get(i);
      assertThat(choice.get("index").asInt()).isEqualTo(i);
      assertThat(choice.get("text").asText()).isEqualTo("Hel");
    }
    // Two primers (greedy, one token each), then each prompt's two choices after its primer.
    List<Sampling> samplings = List.copyOf(engine.samplings);
    assertThat(samplings.subList(0, 2)).containsOnly(Sampling.GREEDY);
    assertThat(samplings.subList(2, 6))
        .containsExactlyInAnyOrder(
            new Sampling(0.5f, 1, 0, 10),
            new Sampling(0.5f, 1, 0, 11),
            new Sampling(0.5f, 1, 0, 12),
            new Sampling(0.5f, 1, 0, 13));
    List<String> log = List.copyOf(engine.log);
    assertThat(log).filteredOn("submit 1"::equals).hasSize(2);
    assertThat(log).filteredOn("submit 3"::equals).hasSize(4);
    assertThat(log.indexOf("submit 3"))
        .as("no choice starts before a primer ended: %s", log)
        .isGreaterThan(log.indexOf("finish 1"));
    int secondPrimerEnd = log.lastIndexOf("finish 1");
    assertThat(log.subList(0, secondPrimerEnd).stream().filter("submit 3"::equals).count())
        .as("before the second primer ends, only the first prompt's two choices: %s", log)
        .isLessThanOrEqualTo(2);
    JsonNode usage = body.get("usage");
    assertThat(usage.get("prompt_tokens").asInt()).as("each prompt once").isEqualTo(10);
    assertThat(usage.get("completion_tokens").asInt()).isEqualTo(12);
    // The fake engine reports half of each prompt cached: 2 + 3, each prompt once.
    assertThat(usage.get("prompt_tokens_details").get("cached_tokens").asInt()).isEqualTo(5);
    assertThat(body.get("kvtier").get("matched_tokens").asInt()).isEqualTo(5);
  }

  /** Without prefix caching a primer would save nothing: the choices start at once. */
  @Test
  void withoutPrefixCachingTheChoicesStartAtOnce() throws Exception {
    JsonNode body =
        json(
            post(
                "/v1/completions",
                "{\"model\": \"kvtier-tiny\", \"prompt\": \"abcd\", \"n\": 3,"
                    + " \"max_tokens\": 2}"));

    assertThat(body.get("choices")).hasSize(3);
    assertThat(engine.log).filteredOn(e -> e.startsWith("submit")).containsOnly("submit 2");
    assertThat(engine.samplings).containsOnly(Sampling.GREEDY);
    assertThat(body.get("usage").get("prompt_tokens").asInt()).isEqualTo(4);
    assertThat(body.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt())
        .isEqualTo(2);
  }

  /** A streamed chat with {@code n} 2: a role chunk, the text and a finish for each index. */
  @Test
  void aStreamedChatWithTwoChoicesSendsEachUnderItsIndex() throws Exception {
    engine.cachesPrefixes = true;
    HttpResponse<String> streamed =
        post(
            "/v1/chat/completions",
            "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
                + " \"hi\"}], \"n\": 2, \"max_tokens\": 5, \"stream\": true}");

    assertThat(streamed.statusCode()).as(streamed.body()).isEqualTo(200);
    List<String> events = events(streamed);
    assertThat(events.getLast()).isEqualTo("[DONE]");
    Map<Integer, StringBuilder> texts = new java.util.TreeMap<>();
    Map<Integer, Integer> roles = new HashMap<>();
    Map<Integer, String> finishes = new HashMap<>();
    for (String e : events.subList(0, events.size() - 1)) {
      JsonNode choice = JSON.readTree(e).get("choices").get(0);
      int index = choice.get("index").asInt();
      JsonNode delta = choice.get("delta");
      if (delta.has("role")) {
        roles.merge(index, 1, Integer::sum);
      }
      if (delta.has("content")) {
        texts
            .computeIfAbsent(index, i -> new StringBuilder())
            .append(delta.get("content").asText());
      }
      if (!choice.get("finish_reason").isNull()) {
        assertThat(finishes.put(index, choice.get("finish_reason").asText())).isNull();
      }
    }
    assertThat(roles).containsOnlyKeys(0, 1).containsValues(1);
    assertThat(texts.get(0).toString()).isEqualTo("Hello").isEqualTo(texts.get(1).toString());
    assertThat(finishes).containsOnlyKeys(0, 1);
  }

  /**
   * A choice the engine refuses after its prompt's primer ran is the call's answer (429), and no
   * choice is left running; a primer that fails fails the call with its cause.
   */
  @Test
  void aRefusedChoiceOrAFailedPrimerFailsTheCall() throws Exception {
    engine.cachesPrefixes = true;
    engine.accepts = 2; // the primer and one choice
    HttpResponse<String> refused =
        post(
            "/v1/completions",
            "{\"model\": \"kvtier-tiny\", \"prompt\": \"abcd\", \"n\": 3, \"max_tokens\": 2}");
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
    assertThat(json(refused).get("error").get("code").asText()).isEqualTo("queue_full");
    assertThat(engine.log).containsSubsequence("submit 1", "finish 1", "submit 2");
    assertThat(engine.cancelled.get()).as("the choice that started was cancelled").isEqualTo(1);

    engine.accepts = Integer.MAX_VALUE;
    engine.failure.set(
        new RequestFailedException(RequestOutcome.LOAD_FAILED, "the primer's load-back failed"));
    HttpResponse<String> failed =
        post(
            "/v1/completions",
            "{\"model\": \"kvtier-tiny\", \"prompt\": \"abcd\", \"n\": 3, \"stream\": true}");
    List<String> events = events(failed);
    assertThat(events.getLast()).isEqualTo("[DONE]");
    assertThat(events.get(events.size() - 2)).contains("the primer's load-back failed");
  }

  /**
   * A completion's {@code logprobs}: OpenAI's {@code tokens}, {@code token_logprobs}, {@code
   * top_logprobs} and {@code text_offset}, a token that is half a character as {@code bytes:\xNN};
   * streamed, the chunks' entries add up to the whole answer's.
   */
  @Test
  void aCompletionsLogprobsHaveOpenAisShapeWholeAndStreamed() throws Exception {
    String request =
        "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\", \"max_tokens\": 3, \"logprobs\": 3";
    JsonNode whole = json(post("/v1/completions", request + "}"));
    assertThat(engine.samplings).allSatisfy(s -> assertThat(s.logprobs()).isEqualTo(3));

    JsonNode logprobs = whole.at("/choices/0/logprobs");
    assertThat(logprobs.get("tokens").toString()).isEqualTo("[\"H\",\"e\",\"l\"]");
    assertThat(logprobs.get("token_logprobs").toString()).isEqualTo("[-0.25,-0.5,-0.75]");
    assertThat(logprobs.get("text_offset").toString()).isEqualTo("[0,1,2]");
    assertThat(logprobs.get("top_logprobs").get(0).toString())
        .isEqualTo("{\"H\":-0.25,\"bytes:\\\\xc3\":-0.75,\"<|300|>\":-1.25}");

    List<String> events = events(post("/v1/completions", request + ", \"stream\": true}"));
    List<String> tokens = new ArrayList<>();
    List<String> offsets = new ArrayList<>();
    for (String e : events.subList(0, events.size() - 1)) {
      JsonNode lp = JSON.readTree(e).at("/choices/0/logprobs");
      lp.get("tokens").forEach(t -> tokens.add(t.asText()));
      lp.get("text_offset").forEach(t -> offsets.add(t.asText()));
    }
    assertThat(tokens).containsExactly("H", "e", "l");
    assertThat(offsets).containsExactly("0", "1", "2");
  }

  /**
   * A chat's {@code logprobs} and {@code top_logprobs}: each token's text, log-probability and
   * bytes, and its most likely alternatives; without them, {@code logprobs} is null; a model
   * without a tokenizer names its tokens {@code token_id:N}.
   */
  @Test
  void aChatsLogprobsHaveOpenAisShape() throws Exception {
    JsonNode body =
        json(
            post(
                "/v1/chat/completions",
                "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
                    + " \"hi\"}], \"max_tokens\": 2, \"logprobs\": true, \"top_logprobs\": 2}"));
    JsonNode content = body.at("/choices/0/logprobs/content");
    assertThat(content).hasSize(2);
    assertThat(content.get(0).toString())
        .isEqualTo(
            "{\"token\":\"H\",\"logprob\":-0.25,\"bytes\":[72],\"top_logprobs\":"
                + "[{\"token\":\"H\",\"logprob\":-0.25,\"bytes\":[72]},"
                + "{\"token\":\"bytes:\\\\xc3\",\"logprob\":-0.75,\"bytes\":[195]}]}");
    assertThat(body.at("/choices/0/logprobs/refusal").isNull()).isTrue();

    JsonNode without =
        json(
            post(
                "/v1/chat/completions",
                "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
                    + " \"hi\"}], \"max_tokens\": 2, \"logprobs\": false}"));
    assertThat(without.at("/choices/0/logprobs").isNull()).isTrue();

    engine.text = ModelText.tokensOnly("ids-only");
    JsonNode ids =
        json(
            post(
                "/v1/completions",
                "{\"model\": \"kvtier-tiny\", \"prompt\": [1, 2], \"max_tokens\": 1, \"logprobs\":"
                    + " 1}"));
    assertThat(ids.at("/choices/0/logprobs/tokens/0").asText()).isEqualTo("token_id:72");
  }

  @Test
  void anUnknownModelIs404ModelNotFound() throws Exception {
    HttpResponse<String> response =
        post("/v1/completions", "{\"model\": \"gpt-4\", \"prompt\": \"a\"}");

    assertThat(response.statusCode()).isEqualTo(404);
    JsonNode error = json(response).get("error");
    assertThat(error.get("code").asText()).isEqualTo("model_not_found");
    assertThat(error.get("param").asText()).isEqualTo("model");
    assertThat(error.get("message").asText()).contains("\"gpt-4\"").contains("\"kvtier-tiny\"");
  }

  @Test
  void modelsListsTheOneModelServed() throws Exception {
    JsonNode list = json(get("/v1/models"));

    assertThat(list.get("object").asText()).isEqualTo("list");
    assertThat(list.get("data")).hasSize(1);
    assertThat(list.get("data").get(0).get("id").asText()).isEqualTo("kvtier-tiny");
    assertThat(list.get("data").get(0).get("object").asText()).isEqualTo("model");
    assertThat(list.get("data").get(0).get("root").asText())
        .as("the model's own name")
        .isEqualTo(TinyText.NAME);
    // Options without a layer mix report none (serve always gives one).
    assertThat(list.get("data").get(0).has("kvtier")).isFalse();
    assertThat(json(get("/v1/models/kvtier-tiny")).get("id").asText()).isEqualTo("kvtier-tiny");
    assertThat(get("/v1/models/other").statusCode()).isEqualTo(404);
  }

  @Test
  void aModelWithoutATokenizerTakesTokenIdsAndSaysWhyItRefusesText() throws Exception {
    engine.text = ModelText.tokensOnly("ids-only");

    HttpResponse<String> text =
        post("/v1/completions", "{\"model\": \"kvtier-tiny\", \"prompt\": [\"a\", \"b\"]}");
    HttpResponse<String> chat =
        post(
            "/v1/chat/completions",
            "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
                + " \"Hi\"}]}");
    JsonNode ids =
        json(
            post(
                "/v1/completions",
                "{\"model\": \"kvtier-tiny\", \"prompt\": [1, 2], \"max_tokens\": 3}"));

    assertThat(text.statusCode()).isEqualTo(400);
    JsonNode error = json(text).get("error");
    assertThat(error.get("param").asText()).isEqualTo("prompt[0]");
    assertThat(error.get("message").asText())
        .isEqualTo(
            "model ids-only has no tokenizer, so a text prompt cannot be encoded: send the prompt"
                + " as an array of token ids");
    assertThat(chat.statusCode()).isEqualTo(400);
    assertThat(json(chat).get("error").get("param").asText()).isEqualTo("messages");
    JsonNode choice = ids.get("choices").get(0);
    assertThat(choice.get("text").asText()).as("no text, only ids").isEmpty();
    assertThat(choice.get("token_ids")).hasSize(3);
    assertThat(json(get("/v1/models")).get("data").get(0).get("root").asText())
        .isEqualTo("ids-only");
  }

  @Test
  void invalidUtf8AndOversizedBodiesAreClientErrors() throws Exception {
    HttpResponse<String> utf8 =
        client.send(
            HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .POST(
                    HttpRequest.BodyPublishers.ofByteArray(
                        new byte[] {'{', (byte) 0xC3, (byte) 0x28, '}'}))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(utf8.statusCode()).isEqualTo(400);
    assertThat(utf8.body()).contains("not valid UTF-8");

    HttpResponse<String> large = post("/v1/completions", " ".repeat(5000));
    assertThat(large.statusCode()).isEqualTo(413);
    assertThat(json(large).get("error").get("code").asText()).isEqualTo("body_too_large");
  }

  @Test
  void unknownPathsAre404WrongMethods405WithAllowAndHeadHealthIsServed() throws Exception {
    HttpResponse<String> missing = get("/v1/chat");
    assertThat(missing.statusCode()).isEqualTo(404);
    assertThat(missing.body()).contains("no such path /v1/chat");

    HttpResponse<String> getCompletions = get("/v1/completions");
    assertThat(getCompletions.statusCode()).isEqualTo(405);
    assertThat(getCompletions.headers().firstValue("Allow")).hasValue("POST");
    HttpResponse<String> postHealth = post("/health", "");
    assertThat(postHealth.statusCode()).isEqualTo(405);
    assertThat(postHealth.headers().firstValue("Allow")).hasValue("GET, HEAD");

    HttpResponse<String> head =
        client.send(
            HttpRequest.newBuilder(base.resolve("/health"))
                .method("HEAD", HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(head.statusCode()).isEqualTo(200);
    assertThat(head.body()).isEmpty();
    JsonNode health = json(get("/health"));
    assertThat(health.get("status").asText()).isEqualTo("ok");
    assertThat(health.get("running").asInt()).isZero();
  }

  @Test
  void withAnApiKeyV1NeedsTheBearerTokenAndHealthAndMetricsStayOpen() throws Exception {
    server.close();
    server = start(engine, Optional.of("s3cret"));
    base = URI.create("http://127.0.0.1:" + server.address().getPort());
    String body = "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\", \"max_tokens\": 1}";

    HttpResponse<String> none = post("/v1/completions", body);
    HttpResponse<String> wrong = post("/v1/completions", body, "Authorization", "Bearer s3cre");
    HttpResponse<String> models = get("/v1/models");
    HttpResponse<String> right = post("/v1/completions", body, "Authorization", "Bearer s3cret");

    assertThat(none.statusCode()).isEqualTo(401);
    assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer");
    JsonNode error = json(none).get("error");
    assertThat(error.get("code").asText()).isEqualTo("invalid_api_key");
    assertThat(error.get("message").asText()).contains("Authorization: Bearer");
    assertThat(wrong.statusCode()).isEqualTo(401);
    assertThat(wrong.body()).contains("the API key is wrong");
    assertThat(models.statusCode()).isEqualTo(401);
    assertThat(right.statusCode()).as(right.body()).isEqualTo(200);
    assertThat(get("/health").statusCode()).isEqualTo(200);
    assertThat(get("/metrics").statusCode()).isEqualTo(200);
  }

  @Test
  void aFullEngineQueueIs429WithRetryAfter() throws Exception {
    engine.busy.set(true);

    HttpResponse<String> refused =
        post("/v1/completions", "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\"}");

    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
    JsonNode error = json(refused).get("error");
    assertThat(error.get("code").asText()).isEqualTo("queue_full");
    assertThat(error.get("message").asText()).contains("queue is full");
  }

  @Test
  void engineFailuresAre503WithTheCause() throws Exception {
    String body = "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\"}";
    engine.failure.set(
        new RequestFailedException(RequestOutcome.LOAD_FAILED, "the load-back failed to copy"));
    HttpResponse<String> load = post("/v1/completions", body);
    engine.failure.set(new IllegalArgumentException("the prompt can never fit the device pool"));
    HttpResponse<String> tooBig = post("/v1/completions", body);
    assertThat(server.failure()).as("a request's own failure is not the engine's").isNotDone();
    engine.failure.set(
        new RankGroupFailedException(
            0,
            1,
            7,
            TickStep.FORWARD,
            "IllegalStateException: injected",
            "tick 7, step FORWARD",
            new IllegalStateException("injected")));
    HttpResponse<String> rank = post("/v1/completions", body);
    HttpResponse<String> rankStreamed =
        post("/v1/completions", body.replace("}", ", \"stream\": true}"));

    assertThat(tooBig.statusCode()).isEqualTo(400);
    assertThat(tooBig.body()).contains("can never fit the device pool");
    assertThat(server.failure()).as("the command stops the server on it").isDone();
    assertThat(server.failure().join().getMessage()).contains("rank 1 failed at tick 7");
    assertThat(load.statusCode()).isEqualTo(503);
    assertThat(load.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(json(load).get("error").get("code").asText()).isEqualTo("load_failed");
    assertThat(rank.statusCode()).isEqualTo(503);
    assertThat(json(rank).get("error").get("message").asText()).contains("rank 1 failed at tick 7");
    assertThat(json(rank).get("error").get("type").asText()).isEqualTo("server_error");
    // Streamed, the status went out first: the error comes as an event, then [DONE].
    List<String> events = events(rankStreamed);
    assertThat(events.getLast()).isEqualTo("[DONE]");
    assertThat(JSON.readTree(events.get(events.size() - 2)).get("error").get("code").asText())
        .isEqualTo("rank_group_failed");
  }

  /** Raw HTTP over a socket, for bodies no client library sends. */
  private String raw(String head, String body, boolean halfClose) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", server.address().getPort())) {
      socket.setSoTimeout(20_000);
      OutputStream out = socket.getOutputStream();
      out.write((head + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
      out.flush();
      if (halfClose) {
        socket.shutdownOutput();
      }
      InputStream in = socket.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void aSilentHalfSentBodyIsAnswered408AtTheReadTimeout() throws Exception {
    long start = System.nanoTime();
    String answer =
        raw(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100\r\nConnection: close",
            "{\"model\": ",
            false);

    assertThat(answer).startsWith("HTTP/1.1 408").contains("\"code\":\"timeout\"");
    assertThat(answer).contains("10 bytes came, then nothing");
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("the connection is not held")
        .isLessThan(Duration.ofSeconds(15));
  }

  @Test
  void aBodyShorterThanItsContentLengthIsAnswered400() throws Exception {
    String answer =
        raw(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nConnection: close",
            "{\"model\": ",
            true);

    assertThat(answer).startsWith("HTTP/1.1 400").contains("the body ended after 10 bytes");
  }

  @Test
  void theMetricsScrapeParsesAndHasTheRequestMeters() throws Exception {
    assertThat(
            post(
                    "/v1/completions",
                    "{\"model\": \"kvtier-tiny\", \"prompt\": \"ab\", \"max_tokens\": 3}")
                .statusCode())
        .isEqualTo(200);
    assertThat(post("/v1/completions", "nope").statusCode()).isEqualTo(400);

    HttpResponse<String> scrape = get("/metrics");

    assertThat(scrape.statusCode()).isEqualTo(200);
    Map<String, Double> samples = new HashMap<>();
    for (String line : scrape.body().split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      assertThat(line).as("a sample line").matches(SAMPLE);
      int space = line.lastIndexOf(' ');
      samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
    }
    assertThat(samples)
        .containsEntry("kvtier_prompt_tokens_total", 2.0)
        .containsEntry("kvtier_generation_tokens_total", 3.0)
        .containsEntry("kvtier_request_success_total{finished_reason=\"length\"}", 1.0)
        .containsEntry("kvtier_time_to_first_token_seconds_count", 1.0)
        .containsEntry("kvtier_inter_token_latency_seconds_count", 2.0)
        .containsEntry("kvtier_e2e_request_latency_seconds_count", 1.0)
        .containsEntry("kvtier_num_requests_running", 0.0)
        .containsEntry("kvtier_num_requests_waiting", 0.0)
        .containsKey("kvtier_http_requests_total{route=\"/v1/completions\",status=\"400\"}");
    assertThat(scrape.body())
        .contains("# HELP kvtier_time_to_first_token_seconds Time from a request's arrival");
  }

  @Test
  void closeLetsARunningGenerationFinishThenRefusesConnections() throws Exception {
    engine.tokens = new Semaphore(0);
    var pending =
        client.sendAsync(
            HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\", \"max_tokens\": 3}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    while (engine.submitted.get() == 0) {
      Thread.sleep(1);
    }
    Thread closing = Thread.ofPlatform().start(server::close);
    engine.tokens.release(3);
    closing.join();

    assertThat(pending.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(JSON.readTree(pending.join().body()).get("choices").get(0).get("text").asText())
        .isEqualTo("Hel");
    assertThatThrownBy(() -> get("/health")).isInstanceOf(IOException.class);
  }

  @Test
  void aRequestPastItsDeadlineIs503TimeoutAndItsGenerationIsCancelled() throws Exception {
    server.close();
    server =
        CompletionServer.start(
            engine,
            new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
            new InetSocketAddress("127.0.0.1", 0),
            new CompletionServer.Options(
                "kvtier-tiny",
                Optional.empty(),
                4096,
                Duration.ofSeconds(5),
                Duration.ofSeconds(1)));
    base = URI.create("http://127.0.0.1:" + server.address().getPort());
    engine.tokens = new Semaphore(0); // the engine never produces a token

    HttpResponse<String> late =
        post("/v1/completions", "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\"}");

    assertThat(late.statusCode()).isEqualTo(503);
    assertThat(late.headers().firstValue("Retry-After")).hasValue("5");
    assertThat(json(late).get("error").get("code").asText()).isEqualTo("timeout");
    assertThat(engine.cancelled.get()).isEqualTo(1);
    engine.tokens.release(100);
  }

  @Test
  void aClientThatGoesAwayMidStreamCancelsItsGeneration() throws Exception {
    engine.tokens = new Semaphore(0);
    String body =
        "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\", \"max_tokens\": 200, \"stream\": true}";
    try (Socket socket = new Socket("127.0.0.1", server.address().getPort())) {
      socket
          .getOutputStream()
          .write(
              ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                      + body.length()
                      + "\r\n\r\n"
                      + body)
                  .getBytes(StandardCharsets.UTF_8));
      engine.tokens.release(1);
      InputStream in = socket.getInputStream();
      assertThat(in.read()).as("the stream started").isPositive();
    }
    // Each token is one more write to a closed connection; one of them fails.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (engine.cancelled.get() == 0 && System.nanoTime() < deadline) {
      engine.tokens.release(1);
      Thread.sleep(20);
    }

    assertThat(engine.cancelled.get()).isEqualTo(1);
    engine.tokens.release(1000);
  }

  @Test
  void aRequestJettyCannotParseIsAnsweredInTheApisShape() throws Exception {
    String answer =
        raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc", "", false);

    assertThat(answer).startsWith("HTTP/1.1 400").contains("\"type\":\"invalid_request_error\"");
    assertThat(answer).contains("the HTTP request was not understood");
  }
}
