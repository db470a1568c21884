package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.llama.LlamaServingModel;
import io.kvtier.server.CompletionServer;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SharedFiles;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * stories260K served over OpenAI's API with its own text: the model {@code gguf} ({@link
 * LlamaServingModel}) with the file's text ({@code GgufText}, from {@code ServingModel.text()}). A
 * completion of an empty prompt (BOS alone) is the model's known greedy start, in words; a chat
 * on this template-less base model is its contents continued, the same tokens as the completion
 * of the same text. The file comes from {@code ../shared} (skipped, saying so, where absent).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class GgufTextServedTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static Path stories() {
    return SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
  }

  private static JsonNode post(HttpClient client, URI base, String path, String body)
      throws Exception {
    HttpResponse<String> response =
        client.send(
            HttpRequest.newBuilder(base.resolve(path))
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    return JSON.readTree(response.body());
  }

  @Test
  void storiesAnswersInWordsThroughItsOwnText() throws Exception {
    Path path = stories();
    try (LlamaServingModel llama =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      KvTierConfig config =
          KvTierConfig.builder()
              .device("sim")
              .host("sim")
              .collective("local")
              .ranks(1)
              .layout(llama.layers(), llama.kvHeads(), llama.headSize(), Float.BYTES, 16)
              .devicePages(64)
              .hostPages(256)
              .writePolicy(WritePolicy.WRITE_THROUGH)
              .evictionPolicy(EvictionPolicy.LRU)
              .vocabSize(llama.vocabularySize())
              .build();
      try (GenerationEngine engine =
              GenerationEngines.open(
                  llama,
                  config,
                  EngineSettings.DEFAULTS.withGroup("gguf-text-" + System.nanoTime()),
                  BackendMetrics.NOOP);
          CompletionServer server =
              CompletionServer.start(
                  engine,
                  new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                  new InetSocketAddress("127.0.0.1", 0),
                  new CompletionServer.Options(
                      "stories",
                      Optional.empty(),
                      1 << 20,
                      Duration.ofSeconds(30),
                      Duration.ofSeconds(60)));
          HttpClient client = HttpClient.newHttpClient()) {
        URI base = URI.create("http://127.0.0.1:" + server.address().getPort());

        JsonNode fromBos =
            post(
                client,
                base,
                "/v1/completions",
                "{\"model\": \"stories\", \"prompt\": \"\", \"max_tokens\": 15}");
        JsonNode completion =
            post(
                client,
                base,
                "/v1/completions",
                "{\"model\": \"stories\", \"prompt\": \"Once upon a time\", \"max_tokens\": 12}");
        JsonNode chat =
            post(
                client,
                base,
                "/v1/chat/completions",
                "{\"model\": \"stories\", \"messages\": [{\"role\": \"user\", \"content\": \"Once"
                    + " upon a time\"}], \"max_completion_tokens\": 12}");

        // MODELS.md: greedy from BOS starts with these 15 ids, this sentence
        assertThat(fromBos.get("choices").get(0).get("text").asText())
            .isEqualTo("Once upon a time, there was a little girl named Lily.");
        assertThat(fromBos.get("usage").get("prompt_tokens").asInt()).as("BOS alone").isOne();
        JsonNode completed = completion.get("choices").get(0);
        JsonNode replied = chat.get("choices").get(0);
        assertThat(replied.get("token_ids")).isEqualTo(completed.get("token_ids"));
        String continuation = completed.get("text").asText();
        assertThat(continuation).isNotBlank();
        assertThat(replied.get("message").get("content").asText())
            .as("a reply is a text of its own: no leading space")
            .isEqualTo(continuation.startsWith(" ") ? continuation.substring(1) : continuation);
        assertThat(chat.get("usage").get("prompt_tokens").asInt())
            .isEqualTo(completion.get("usage").get("prompt_tokens").asInt())
            .isEqualTo(llama.text().encode("Once upon a time").length);
      }
    }
  }
}
