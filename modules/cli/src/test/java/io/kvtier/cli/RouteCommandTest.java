package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.route.PromptTokens;
import io.kvtier.serving.ModelText;
import io.kvtier.testkit.SharedFiles;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code kvtier route}'s usage errors; the router itself is tested in modules/route. */
class RouteCommandTest {

  private static String[] run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int status = KvTierCli.run(new PrintWriter(out), new PrintWriter(err), args);
    return new String[] {Integer.toString(status), out.toString(), err.toString()};
  }

  @Test
  void theCommandIsListedAndAReplicaIsRequired() {
    assertThat(run("--help")[1]).contains("route");
    String[] none = run("route");
    assertThat(none[0]).isEqualTo("2");
    assertThat(none[2]).contains("--replica");
  }

  @Test
  void aBadReplicaOrWeightIsAUsageErrorThatSaysTheForm() {
    String[] bad = run("route", "--replica", "http://h:8000");
    assertThat(bad[0]).isEqualTo("2");
    assertThat(bad[2]).contains("HTTP_BASE,EVENTS_ENDPOINT[,REPLAY_ENDPOINT]");
    String[] weight = run("route", "--replica", "http://h:8000,tcp://h:5557", "--host-weight", "3");
    assertThat(weight[0]).isEqualTo("2");
    assertThat(weight[2]).contains("hostWeight=3.0");
  }

  @Test
  void aModelThatCannotBeOpenedIsAUsageErrorNamingIt() {
    String[] missing =
        run("route", "--replica", "http://h:8000,tcp://h:5557", "--model", "no-such-model.gguf");
    assertThat(missing[0]).isEqualTo("2");
    assertThat(missing[2]).contains("--model no-such-model.gguf", "does not exist");
  }

  /**
   * With {@code --model FILE.gguf} the router reads a text prompt and chat messages into the ids
   * serve caches for the same file (its tokenizer, BOS and chat template), not the tiny
   * transformer's bytes; ids are taken as given, and a message the router cannot read gives none.
   */
  @Test
  void aGgufModelsPromptsBecomeTheIdsServeCachesForIt() {
    Path file = SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
    try (ServedModel served = ServedModel.gguf(file, Optional.empty())) {
      ModelText text = served.model().text();
      PromptTokens prompts = RouteCommand.textPrompts(text);
      String prompt = "Once upon a time, there was a little girl";

      int[] ids = prompts.tokens(Map.of("prompt", prompt));

      assertThat(ids).containsExactly(text.encode(prompt)).hasSizeLessThan(prompt.length());
      assertThat(ids).isNotEqualTo(PromptTokens.BYTES.tokens(Map.of("prompt", prompt)));
      assertThat(
              prompts.tokens(
                  Map.of(
                      "messages",
                      List.of(
                          Map.of("role", "system", "content", "Tell a story."),
                          Map.of("role", "user", "content", prompt)))))
          .containsExactly(
              text.chat(
                  List.of(
                      new ModelText.Message("system", "Tell a story."),
                      new ModelText.Message("user", prompt))));
      assertThat(prompts.tokens(Map.of("prompt", List.of(1, 403)))).containsExactly(1, 403);
      assertThat(prompts.tokens(Map.of("messages", List.of(Map.of("role", "user", "content", 3)))))
          .isEmpty();
    }
  }

  @Test
  void aBadPolicyOrARingbufferWithoutAClusterIsAUsageError() {
    String[] policy = run("route", "--replica", "http://h:8000,tcp://h:5557", "--policy", "random");
    assertThat(policy[0]).isEqualTo("2");
    assertThat(policy[2]).contains("--policy random", "[prefix, round-robin]");
    String[] ring = run("route", "--port", "0", "--replica", "http://h:8000,hazelcast:events-0");
    assertThat(ring[0]).isEqualTo("2");
    assertThat(ring[2]).contains("--hazelcast-addresses");
  }

  private static final String P = "http://h:8001,tcp://h:5558";
  private static final String D = "http://h:8002,tcp://h:5559";

  @Test
  void prefillAndDecodeAreExclusiveWithReplicaAndNeedEachOther() {
    String[] both =
        run("route", "--replica", "http://h:8000,tcp://h:5557", "--prefill", P, "--decode", D);
    assertThat(both[0]).isEqualTo("2");
    assertThat(both[2]).contains("--replica and --prefill/--decode are exclusive");
    String[] prefillOnly = run("route", "--prefill", P);
    assertThat(prefillOnly[0]).isEqualTo("2");
    assertThat(prefillOnly[2]).contains("--prefill needs at least one --decode replica");
    String[] decodeOnly = run("route", "--decode", D, "--decode", D);
    assertThat(decodeOnly[0]).isEqualTo("2");
    assertThat(decodeOnly[2]).contains("--decode needs at least one --prefill replica");
  }

  @Test
  void aBadPoolReplicaOrDecodeWeightIsAUsageErrorNamingItsOption() {
    String[] spec = run("route", "--prefill", P, "--decode", "http://h:8002");
    assertThat(spec[0]).isEqualTo("2");
    assertThat(spec[2]).contains("--decode http://h:8002: write HTTP_BASE,EVENTS_ENDPOINT");
    String[] unified = run("route", "--replica", P, "--decode-overlap-weight", "2");
    assertThat(unified[0]).isEqualTo("2");
    assertThat(unified[2]).contains("--decode-overlap-weight weighs the decode pool");
    // --replica's answers are bounded by it too, so it is checked there as well.
    String[] unifiedShorter =
        run(
            "route",
            "--replica",
            P,
            "--replica-read-timeout",
            "60",
            "--replica-answer-timeout",
            "30");
    assertThat(unifiedShorter[0]).isEqualTo("2");
    assertThat(unifiedShorter[2])
        .contains("--replica-answer-timeout 30 must be at least --replica-read-timeout 60");
    String[] shorter =
        run(
            "route",
            "--prefill",
            P,
            "--decode",
            D,
            "--replica-read-timeout",
            "60",
            "--replica-answer-timeout",
            "30");
    assertThat(shorter[0]).isEqualTo("2");
    assertThat(shorter[2])
        .contains("--replica-answer-timeout 30 must be at least --replica-read-timeout 60");
    String[] negative =
        run("route", "--prefill", P, "--decode", D, "--decode-overlap-weight", "-1");
    assertThat(negative[0]).isEqualTo("2");
    assertThat(negative[2]).contains("--decode-overlap-weight -1.0 must be >= 0");
  }

  /** A replica whose {@code GET /health} names a role its pool cannot use stops the router. */
  @Test
  void aReplicaOfAnotherRoleIsAUsageErrorAtStart() throws Exception {
    try (ServerSocket health = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread.ofVirtual()
          .start(() -> answerHealth(health, "{\"status\":\"ok\",\"role\":\"decode\"}"));
      String url = "http://127.0.0.1:" + health.getLocalPort();
      String[] r =
          run(
              "route",
              "--port",
              "0",
              "--prefill",
              url + ",tcp://127.0.0.1:1",
              "--decode",
              url + ",tcp://127.0.0.1:1");
      assertThat(r[0]).isEqualTo("2");
      assertThat(r[2])
          .contains("--prefill " + url + " is a decode replica", "--role prefill or --role both")
          .doesNotContain("--decode " + url);
    }
  }

  /** Answers every request on the socket with 200 and {@code json}, until it is closed. */
  private static void answerHealth(ServerSocket server, String json) {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    while (!server.isClosed()) {
      try (Socket s = server.accept()) {
        BufferedReader in =
            new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
          // The request's line and headers: every path gets the same answer.
        }
        OutputStream out = s.getOutputStream();
        out.write(
            ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    + body.length
                    + "\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
      } catch (IOException e) {
        // Closed by the test, or a client gone: the loop's condition decides.
      }
    }
  }
}
