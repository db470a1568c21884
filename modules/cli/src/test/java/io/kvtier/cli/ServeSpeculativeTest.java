package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.KvTierKeys;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code kvtier serve --speculative} (docs/MODELS.md, "Speculative decoding") on stories260K: the
 * draft layer's block joins the layout and its identity the L3 model id, and every unusable value
 * exits 2 with one line. Skipped with the reason where ../shared lacks stories260K.
 */
class ServeSpeculativeTest {
  private static final String STORIES = "models/tinyllamas-stories-260k-f32.gguf";

  @Test
  void aDraftLayerAddsItsBlockToTheLayoutAndItsNameToTheL3ModelId() {
    Path model = io.kvtier.testkit.SharedFiles.require(STORIES);
    try (ServedModel plain = ServedModel.gguf(model, Optional.empty());
        ServedModel drafted =
            ServedModel.gguf(
                model,
                Optional.empty(),
                Optional.of("draft-layer:copy-last"),
                Optional.of(3),
                Optional.empty())) {
      assertThat(plain.fixedKeys()).containsEntry(KvTierKeys.LAYERS, "5");
      assertThat(drafted.fixedKeys()).containsEntry(KvTierKeys.LAYERS, "6");
      assertThat(drafted.l3ModelId()).isEqualTo(plain.l3ModelId() + "-draft-copy-last");
      assertThat(drafted.description())
          .endsWith("; speculative: draft-copy-last (K/V block 5), 3 tokens a step");
    }
  }

  /**
   * A served prompt, then the same prompt again (a device hit): the copy-of-last draft is right
   * at every step in both, the second counted under {@code tier="device"}, and the answer is the
   * same.
   */
  @Test
  @org.junit.jupiter.api.Timeout(value = 2, unit = java.util.concurrent.TimeUnit.MINUTES)
  void servedSpeculationIsCountedPerTierInTheMetrics() throws Exception {
    Path model = io.kvtier.testkit.SharedFiles.require(STORIES);
    ServeCommand command = new ServeCommand();
    java.io.StringWriter out = new java.io.StringWriter();
    picocli.CommandLine cli = new picocli.CommandLine(command);
    cli.setOut(new java.io.PrintWriter(out, true));
    java.util.concurrent.atomic.AtomicInteger status =
        new java.util.concurrent.atomic.AtomicInteger(-1);
    Thread running =
        Thread.ofPlatform()
            .start(
                () ->
                    status.set(
                        cli.execute(
                            "--model",
                            model.toString(),
                            "--port",
                            "0",
                            "--max-context",
                            "256",
                            "--speculative",
                            "draft-layer:copy-last",
                            "--num-speculative-tokens",
                            "3")));
    io.kvtier.server.CompletionServer server;
    while ((server = command.server()) == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
      Thread.sleep(5);
    }
    java.net.URI base = java.net.URI.create("http://127.0.0.1:" + server.address().getPort());
    String body =
        "{\"model\": \"tinyllamas-stories-260k\", \"prompt\": [1, 403, 407, 261, 378, 263, 291,"
            + " 452, 258, 131, 1, 403, 407, 261, 378, 263, 291, 452, 258, 131, 22, 33, 44],"
            + " \"max_tokens\": 12}";
    String first;
    String again;
    String metrics;
    try (java.net.http.HttpClient client = java.net.http.HttpClient.newHttpClient()) {
      first = post(client, base, body);
      again = post(client, base, body);
      metrics =
          client
              .send(
                  java.net.http.HttpRequest.newBuilder(base.resolve("/metrics")).GET().build(),
                  java.net.http.HttpResponse.BodyHandlers.ofString())
              .body();
    }
    command.stop();
    running.join();

    assertThat(status.get()).as(out.toString()).isZero();
    assertThat(out.toString()).contains("speculative: draft-copy-last (K/V block 5), 3 tokens");
    assertThat(again).contains("\"cached_tokens\":16");
    assertThat(tokens(again)).isEqualTo(tokens(first));
    for (String tier : new String[] {"none", "device"}) {
      assertThat(
              value(
                  metrics,
                  "kvtier_speculative_tokens_total{kind=\"proposed\",tier=\"" + tier + "\"}"))
          .as(tier)
          .isPositive();
      assertThat(value(metrics, "kvtier_speculative_acceptance_rate{tier=\"" + tier + "\"}"))
          .as(tier)
          .isEqualTo(1.0);
      assertThat(value(metrics, "kvtier_speculative_accepted_length{tier=\"" + tier + "\"}"))
          .as("3, 3, then 2 (the budget) proposals, all accepted: %s", tier)
          .isEqualTo(8.0 / 3);
    }
    assertThat(value(metrics, "kvtier_speculative_steps_total{tier=\"host\"}")).isZero();
  }

  private static String post(java.net.http.HttpClient client, java.net.URI base, String body)
      throws Exception {
    java.net.http.HttpResponse<String> r =
        client.send(
            java.net.http.HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body))
                .build(),
            java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return r.body();
  }

  /** The completion's text (the tokens' words): the same text, the same tokens. */
  private static String tokens(String response) {
    int at = response.indexOf("\"text\":");
    return response.substring(at, response.indexOf("\"", at + 8 + 1) + 1);
  }

  private static double value(String exposition, String series) {
    return exposition
        .lines()
        .filter(l -> l.startsWith(series + " "))
        .findFirst()
        .map(l -> Double.parseDouble(l.substring(series.length() + 1).strip()))
        .orElseThrow(() -> new AssertionError(series + " not in the metrics:\n" + exposition));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      --speculative eagle | model gguf: speculative=eagle is not a draft: give draft-layer, draft-layer:copy-last or model:FILE.gguf
      --speculative model:draft.gguf | speculative=model:draft.gguf: the draft model's file does not exist or is not a file
      --speculative draft-layer | has no draft layer: speculative=draft-layer reads tensors blk.5.*
      --speculative draft-layer:copy-last --num-speculative-tokens 0 | num-speculative-tokens=0 is outside [1, 64]
      --speculative draft-layer:copy-last --num-speculative-tokens 65 | num-speculative-tokens=65 is outside [1, 64]
      --speculative draft-layer:copy-last --ranks 2 --parallel cp | speculative decoding (draft-copy-last) runs on one rank or under --parallel tp, not over 2 cp ranks
      """)
  void anUnusableSpeculationExits2WithOneLine(String args, String message) {
    Path model = io.kvtier.testkit.SharedFiles.require(STORIES);
    String[] given = args.split(" ");
    String[] all = new String[given.length + 5];
    all[0] = "serve";
    all[1] = "--model";
    all[2] = model.toString();
    all[3] = "--port";
    all[4] = "0";
    System.arraycopy(given, 0, all, 5, given.length);

    CliRun run = CliRun.run(all);

    assertThat(run.status()).as(run.err()).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(run.firstErrLine()).startsWith("kvtier serve: ").contains(message);
    assertThat(run.err().lines().count()).as(run.err()).isEqualTo(1);
  }
}
