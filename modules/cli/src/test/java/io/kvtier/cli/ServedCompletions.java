package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.server.CompletionServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine;

/**
 * The completions a {@code kvtier serve} answers to a list of requests, each written {@code
 * "PATH BODY"} (for example {@code /v1/completions {"model": ...}}), as the rank-process tests
 * compare them: from a server at a URL, or from a one-rank server that this JVM starts and stops.
 */
final class ServedCompletions {
  private ServedCompletions() {}

  /**
   * The completions of {@code requests} from a one-rank {@code kvtier serve} in this JVM, started
   * with {@code options} (without the word {@code serve}) and stopped gracefully after them.
   *
   * @param options serve's options, with {@code --port 0}
   * @param requests the requests, {@code "PATH BODY"}
   * @return each request's choices, in order
   */
  static Map<String, Object> ofOneRank(List<String> options, List<String> requests)
      throws Exception {
    ServeCommand command = new ServeCommand();
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(out, true));
    AtomicInteger status = new AtomicInteger(-1);
    Thread running =
        Thread.ofPlatform().start(() -> status.set(cli.execute(options.toArray(String[]::new))));
    CompletionServer server;
    while ((server = command.server()) == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
      Thread.sleep(5);
    }
    try {
      return of(URI.create("http://127.0.0.1:" + server.address().getPort()), requests);
    } finally {
      command.stop();
      running.join();
      assertThat(status.get()).as(out.toString()).isZero();
    }
  }

  /**
   * Each request's choices (text, token ids, finish reason), sent one after the other.
   *
   * @param base the server's URL
   * @param requests the requests, {@code "PATH BODY"}
   * @return each request's choices, in order, by request
   */
  @SuppressWarnings("unchecked")
  static Map<String, Object> of(URI base, List<String> requests) throws Exception {
    Map<String, Object> choices = new LinkedHashMap<>();
    try (HttpClient client = HttpClient.newHttpClient()) {
      for (String request : requests) {
        int space = request.indexOf(' ');
        HttpResponse<String> answer =
            client.send(
                post(base, request.substring(0, space), request.substring(space + 1)),
                HttpResponse.BodyHandlers.ofString());
        assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
        Map<String, Object> body = (Map<String, Object>) TestJson.parse(answer.body());
        choices.put(request, body.get("choices"));
      }
    }
    return choices;
  }

  /** A JSON POST whose answer is awaited at most the rank processes' hang guard. */
  static HttpRequest post(URI base, String path, String body) {
    return HttpRequest.newBuilder(base.resolve(path))
        .timeout(Duration.ofSeconds(RankProcesses.HANG_GUARD_SECONDS))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
  }
}
