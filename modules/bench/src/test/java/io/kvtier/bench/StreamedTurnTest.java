package io.kvtier.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A load benchmark's call says why it failed, and the failures group by cause. */
class StreamedTurnTest {
  private static HttpServer server;
  private static URI base;
  private static final HttpClient CLIENT = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    answer(
        "/too-long",
        400,
        "{\"error\":{\"message\":\"This model's maximum context length is 256 tokens\","
            + "\"type\":\"invalid_request_error\",\"param\":\"messages\","
            + "\"code\":\"context_length_exceeded\"}}");
    answer("/busy", 503, "overloaded");
    answer(
        "/event",
        200,
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n"
            + "data: {\"error\":{\"message\":\"rank 1 failed\",\"type\":\"server_error\","
            + "\"code\":null}}\n\n");
    answer(
        "/no-usage",
        200,
        "data: {\"choices\":[{\"delta\":{\"content\":\"ab\"},\"finish_reason\":\"length\"}]}\n\n"
            + "data: [DONE]\n\n");
    answer(
        "/ok",
        200,
        "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"
            + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
            + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n"
            + "data: [DONE]\n\n");
    server.start();
    base = URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  private static void answer(String path, int status, String body) {
    server.createContext(
        path,
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(status, bytes.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
          }
        });
  }

  @AfterAll
  static void stop() {
    server.stop(0);
  }

  private static StreamedTurn send(String path) throws InterruptedException {
    return StreamedTurn.send(CLIENT, base.resolve(path), "{}");
  }

  @Test
  void aSuccessfulStreamCarriesItsUsageAndNoFailure() throws Exception {
    StreamedTurn turn = send("/ok");

    assertThat(turn.failed()).isFalse();
    assertThat(turn.text()).isEqualTo("hi");
    assertThat(turn.promptTokens()).isEqualTo(12);
    assertThat(turn.cachedTokens()).isEqualTo(8);
    assertThat(turn.completionTokens()).isEqualTo(2);
    assertThat(turn.tokenNanos()).as("the one chunk with text").hasSize(1);
    assertThat(turn.tokenNanos()[0]).isEqualTo(turn.ttftNanos());
  }

  @Test
  void eachFailureSaysItsCause() throws Exception {
    assertThat(send("/too-long").failure())
        .isEqualTo(
            new StreamedTurn.Failure(
                "HTTP 400 context_length_exceeded",
                "This model's maximum context length is 256 tokens"));
    assertThat(send("/busy").failure())
        .isEqualTo(new StreamedTurn.Failure("HTTP 503", "overloaded"));
    assertThat(send("/event").failure())
        .isEqualTo(new StreamedTurn.Failure("error event server_error", "rank 1 failed"));
    assertThat(send("/no-usage").failure())
        .isEqualTo(new StreamedTurn.Failure("stream without usage", "2 characters streamed"));
  }

  @Test
  void aRefusedConnectionIsAFailureNotAnException() throws Exception {
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }

    StreamedTurn turn =
        StreamedTurn.send(CLIENT, URI.create("http://127.0.0.1:" + closed + "/v1"), "{}");

    assertThat(turn.failure().kind()).isEqualTo("I/O ConnectException");
  }

  @Test
  void failuresGroupByCauseMostFrequentFirst() throws Exception {
    TurnFailures failures = new TurnFailures();
    failures.add(send("/busy").failure());
    failures.add(send("/too-long").failure());
    failures.add(send("/too-long").failure());

    assertThat(failures.total()).isEqualTo(3);
    assertThat(failures.describe("  failed: "))
        .isEqualTo(
            "  failed: 2 x HTTP 400 context_length_exceeded, e.g. \"This model's maximum"
                + " context length is 256 tokens\"\n"
                + "  failed: 1 x HTTP 503, e.g. \"overloaded\"\n");
    assertThat(new TurnFailures().describe("x")).isEmpty();
  }
}
