package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code KVTIER_API_KEY} works as {@code --api-key} does: a {@code kvtier serve} process started
 * with the variable set and no option answers a {@code /v1} request without the key, or with
 * another, 401 in OpenAI's error shape, serves one with {@code Authorization: Bearer KEY}, keeps
 * {@code /health} open, and stops gracefully on SIGTERM with status 0. A process, because the
 * variable is read from the real environment.
 */
@Timeout(120)
class ServeApiKeyEnvironmentTest {
  private static final Pattern LISTENING = Pattern.compile("listening on http://[^:]+:(\\d+),");
  private static final String KEY = "env-key-" + Long.toHexString(System.nanoTime());

  @Test
  void theEnvironmentVariableIsTheApiKey(@TempDir Path dir) throws Exception {
    List<String> command = new ArrayList<>(SimulateRankProcessesTest.java());
    command.addAll(List.of("serve", "--port", "0"));
    Path log = dir.resolve("serve.log");
    ProcessBuilder builder =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    builder.environment().put("KVTIER_API_KEY", KEY);
    Process serve = builder.start();
    try (HttpClient client = HttpClient.newHttpClient()) {
      URI base = awaitListening(serve, log);
      String body = "{\"model\": \"kvtier-tiny\", \"prompt\": \"Hi\", \"max_tokens\": 2}";

      HttpResponse<String> without = client.send(post(base, body, null), ofString());
      HttpResponse<String> wrong = client.send(post(base, body, KEY + "x"), ofString());
      HttpResponse<String> with = client.send(post(base, body, KEY), ofString());
      HttpResponse<String> health =
          client.send(HttpRequest.newBuilder(base.resolve("/health")).build(), ofString());

      for (HttpResponse<String> refused : List.of(without, wrong)) {
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(401);
        @SuppressWarnings("unchecked")
        Map<String, Object> error =
            (Map<String, Object>)
                ((Map<String, Object>) TestJson.parse(refused.body())).get("error");
        assertThat(error)
            .containsOnlyKeys("message", "type", "param", "code")
            .containsEntry("code", "invalid_api_key")
            .containsEntry("type", "invalid_request_error");
        assertThat((String) error.get("message")).doesNotContain(KEY);
      }
      assertThat(with.statusCode()).as(with.body()).isEqualTo(200);
      assertThat(health.statusCode()).isEqualTo(200);
    } finally {
      serve.destroy();
      if (!serve.waitFor(60, TimeUnit.SECONDS)) {
        serve.destroyForcibly();
        throw new AssertionError("serve did not stop on SIGTERM; " + output(log));
      }
    }
    assertThat(serve.exitValue()).as(output(log)).isZero();
    assertThat(output(log)).contains("kvtier serve: stopped after 1 requests");
  }

  private static HttpResponse.BodyHandler<String> ofString() {
    return HttpResponse.BodyHandlers.ofString();
  }

  private static HttpRequest post(URI base, String body, String key) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(base.resolve("/v1/completions"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    return b.build();
  }

  private static URI awaitListening(Process serve, Path log) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      Matcher m = LISTENING.matcher(output(log));
      if (m.find()) {
        return URI.create("http://127.0.0.1:" + m.group(1));
      }
      assertThat(serve.isAlive()).as("serve ended before it listened: %s", output(log)).isTrue();
      Thread.sleep(20);
    }
    throw new AssertionError("serve did not listen within 60 s; " + output(log));
  }

  private static String output(Path log) throws java.io.IOException {
    return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
  }
}
