package io.kvtier.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.gguf.text.GgufText;
import io.kvtier.serving.ModelText;
import io.kvtier.testkit.SharedFiles;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server on a GGUF model's text (Qwen2's real vocabulary, a ChatML template): the chat prompt
 * is the template's tokens, the reply streams characters whole though their bytes come in
 * several tokens, and both endpoints end at the vocabulary's end of generation. The engine is
 * scripted; the vocabulary comes from {@code ../shared} (skipped, saying so, where absent).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class GgufTextServingTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CHATML =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' +"
          + " message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt"
          + " %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  private static final int IM_END = 151645;

  @TempDir Path dir;
  private final FakeEngine engine = new FakeEngine();
  private CompletionServer server;
  private HttpClient client;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
    engine.close();
    if (client != null) {
      client.close();
    }
  }

  private static Path qwen2() {
    return SharedFiles.require("tokenizers/ggml-vocab-qwen2.gguf");
  }

  private GgufText serveQwen2() throws IOException {
    Path copy = dir.resolve("qwen2-chatml.gguf");
    try (GgufFile file = GgufFile.open(qwen2())) {
      GgufWriter writer = new GgufWriter(3);
      file.metadata().forEach(writer::put);
      writer.put("tokenizer.chat_template", GgufValue.ofString(CHATML)).write(copy);
    }
    GgufText text;
    try (GgufFile file = GgufFile.open(copy)) {
      text = GgufText.of(file);
    }
    engine.text = text;
    engine.vocabulary = text.tokenizer().vocabulary().size();
    // the reply's bytes split over tokens where the vocabulary has no whole character, then the
    // end of the turn, then tokens that must never show
    int[] reply = text.tokenizer().encode("Héllo 漢字 🦙!", false);
    assertThat(IntStream.of(reply).mapToObj(id -> text.tokenizer().decode(new int[] {id})))
        .as("some token is part of a character")
        .anyMatch(piece -> piece.contains("\ufffd"));
    engine.script.set(
        IntStream.concat(IntStream.of(reply), IntStream.of(IM_END, 9707, 9707)).toArray());
    server =
        CompletionServer.start(
            engine,
            new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
            new InetSocketAddress("127.0.0.1", 0),
            new CompletionServer.Options(
                "qwen2", Optional.empty(), 1 << 20, Duration.ofSeconds(5), Duration.ofSeconds(30)));
    client = HttpClient.newHttpClient();
    return text;
  }

  private HttpResponse<String> post(String path, String body) throws Exception {
    URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + path);
    return client.send(
        HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aChatIsTheTemplatesTokensAndItsReplyEndsAtTheEndOfTurn() throws Exception {
    GgufText text = serveQwen2();
    String body =
        "{\"model\": \"qwen2\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}],"
            + " \"max_completion_tokens\": 40";

    JsonNode whole = JSON.readTree(post("/v1/chat/completions", body + "}").body());
    HttpResponse<String> streamed = post("/v1/chat/completions", body + ", \"stream\": true}");

    JsonNode choice = whole.get("choices").get(0);
    assertThat(choice.get("message").get("content").asText()).isEqualTo("Héllo 漢字 🦙!");
    assertThat(choice.get("finish_reason").asText()).isEqualTo("stop");
    assertThat(whole.get("usage").get("prompt_tokens").asInt())
        .isEqualTo(text.chat(List.of(new ModelText.Message("user", "Hi"))).length);
    StringBuilder pieces = new StringBuilder();
    for (String event : streamed.body().split("\n\n")) {
      if (event.isBlank() || event.equals("data: [DONE]")) {
        continue;
      }
      JsonNode delta = JSON.readTree(event.substring("data: ".length())).get("choices").get(0);
      if (delta.get("delta").has("content")) {
        String piece = delta.get("delta").get("content").asText();
        assertThat(piece).as("no character is sent broken").doesNotContain("\ufffd");
        pieces.append(piece);
      }
    }
    assertThat(pieces.toString()).isEqualTo("Héllo 漢字 🦙!");
  }

  /**
   * With {@code ignore_eos} (vLLM's, which benchmark clients send) the end of a turn or of a
   * generation ends nothing and shows nothing: both endpoints run to {@code max_tokens}.
   */
  @Test
  void ignoreEosRunsPastTheEndTokensToTheBudget() throws Exception {
    GgufText text = serveQwen2();
    int length = text.tokenizer().encode("Héllo 漢字 🦙!", false).length + 3;

    JsonNode chat =
        JSON.readTree(
            post(
                    "/v1/chat/completions",
                    "{\"model\": \"qwen2\", \"messages\": [{\"role\": \"user\", \"content\":"
                        + " \"Hi\"}], \"ignore_eos\": true, \"max_tokens\": "
                        + length
                        + "}")
                .body());
    JsonNode completion =
        JSON.readTree(
            post(
                    "/v1/completions",
                    "{\"model\": \"qwen2\", \"prompt\": \"Hi\", \"ignore_eos\": true,"
                        + " \"max_tokens\": "
                        + length
                        + "}")
                .body());

    String after = text.tokenizer().decode(new int[] {9707, 9707});
    assertThat(after).isNotEmpty();
    assertThat(chat.get("choices").get(0).get("message").get("content").asText())
        .isEqualTo("Héllo 漢字 🦙!" + after);
    assertThat(chat.get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
    assertThat(chat.get("usage").get("completion_tokens").asInt()).isEqualTo(length);
    assertThat(completion.get("choices").get(0).get("text").asText())
        .isEqualTo("Héllo 漢字 🦙!" + after);
    assertThat(completion.get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
  }

  @Test
  void aCompletionEndsAtTheEndOfGenerationToo() throws Exception {
    serveQwen2();

    JsonNode whole =
        JSON.readTree(
            post(
                    "/v1/completions",
                    "{\"model\": \"qwen2\", \"prompt\": \"Hi\", \"max_tokens\": 40}")
                .body());

    JsonNode choice = whole.get("choices").get(0);
    assertThat(choice.get("text").asText()).isEqualTo("Héllo 漢字 🦙!");
    assertThat(choice.get("finish_reason").asText()).isEqualTo("stop");
  }
}
