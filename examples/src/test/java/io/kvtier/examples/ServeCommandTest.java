package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.examples.serve.CompletionServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code kvtier serve} as a command: starts, answers, stops gracefully, rejects bad config. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServeCommandTest {

  @Test
  void servesCompletionsOnAnEphemeralPortUntilStopped(@TempDir Path dir) throws Exception {
    Path config = dir.resolve("kvtier.properties");
    Files.writeString(config, "kvtier.device=sim\nkvtier.host=sim\nkvtier.page-size=4\n"
        + "kvtier.device-pages=128\nkvtier.host-ratio=4\nkvtier.write-policy=write_back\n");
    ServeCommand command = new ServeCommand();
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(out, true));
    AtomicInteger status = new AtomicInteger(-1);
    Thread running = Thread.ofPlatform().start(() -> status.set(
        cli.execute("--port", "0", "--config", config.toString(), "--queue", "4")));
    CompletionServer server;
    while ((server = command.server()) == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
      Thread.sleep(5);
    }
    URI base = URI.create("http://127.0.0.1:" + server.address().getPort());

    try (HttpClient client = HttpClient.newHttpClient()) {
      HttpResponse<String> first = client.send(HttpRequest.newBuilder(
              base.resolve("/v1/completions")).POST(HttpRequest.BodyPublishers.ofString(
              "{\"prompt_tokens\": [1, 2, 3, 4, 5, 6, 7, 8, 9], \"max_tokens\": 4}")).build(),
          HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> again = client.send(HttpRequest.newBuilder(
              base.resolve("/v1/completions")).POST(HttpRequest.BodyPublishers.ofString(
              "{\"prompt_tokens\": [1, 2, 3, 4, 5, 6, 7, 8, 9], \"max_tokens\": 4}")).build(),
          HttpResponse.BodyHandlers.ofString());

      assertThat(first.statusCode()).isEqualTo(200);
      assertThat(again.statusCode()).isEqualTo(200);
      assertThat(again.body()).contains("\"cached_tokens\":8");
    }
    command.stop();
    running.join();

    assertThat(status.get()).isZero();
    assertThat(out.toString())
        .contains("listening on http://127.0.0.1:" + server.address().getPort())
        .contains("write write_back")
        .contains("stopped after 2 requests");
  }

  @Test
  void aConfigThatChangesTheModelsLayoutIsRejected(@TempDir Path dir) throws Exception {
    Path config = dir.resolve("bad.properties");
    Files.writeString(config, "kvtier.layers=4\n");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();

    int status = KvTierCli.run(new PrintWriter(out), new PrintWriter(err), "serve", "--port",
        "0", "--config", config.toString());

    assertThat(status).isEqualTo(KvTierCli.EXIT_FAILURE);
    assertThat(err.toString()).contains("kvtier.layers=4").contains("needs kvtier.layers=2")
        .doesNotContain("\tat ");
  }

  @Test
  void helpListsTheEndpointsAndOptions() {
    StringWriter out = new StringWriter();

    int status = KvTierCli.run(new PrintWriter(out), new PrintWriter(new StringWriter()),
        "serve", "--help");

    assertThat(status).isZero();
    assertThat(out.toString()).contains("POST /v1/completions").contains("--port")
        .contains("--bind").contains("--config").contains("GET /metrics");
  }
}
