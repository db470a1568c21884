package io.kvtier.cli;

import static io.kvtier.cli.CliRun.assertServeUsage;
import static io.kvtier.cli.CliRun.serve;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.server.CompletionServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** {@code kvtier serve} as a command: starts, answers, stops gracefully, rejects bad config. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServeCommandTest {

  @Test
  void servesCompletionsOnTwoRanksOnAnEphemeralPortUntilStopped(@TempDir Path dir)
      throws Exception {
    Path config = dir.resolve("kvtier.properties");
    Files.writeString(
        config,
        "kvtier.device=sim\nkvtier.host=sim\nkvtier.page-size=4\n"
            + "kvtier.device-pages=128\nkvtier.host-ratio=4\nkvtier.write-policy=write_back\n");
    ServeCommand command = new ServeCommand();
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(out, true));
    AtomicInteger status = new AtomicInteger(-1);
    Thread running =
        Thread.ofPlatform()
            .start(
                () ->
                    status.set(
                        cli.execute(
                            "--port",
                            "0",
                            "--config",
                            config.toString(),
                            "--queue",
                            "4",
                            "--ranks",
                            "2")));
    CompletionServer server;
    while ((server = command.server()) == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
      Thread.sleep(5);
    }
    URI base = URI.create("http://127.0.0.1:" + server.address().getPort());

    try (HttpClient client = HttpClient.newHttpClient()) {
      HttpResponse<String> first =
          client.send(
              HttpRequest.newBuilder(base.resolve("/v1/completions"))
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"model\": \"kvtier-tiny\", \"prompt\": [1, 2, 3, 4, 5, 6, 7, 8, 9],"
                              + " \"max_tokens\": 4}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> again =
          client.send(
              HttpRequest.newBuilder(base.resolve("/v1/completions"))
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"model\": \"kvtier-tiny\", \"prompt\": [1, 2, 3, 4, 5, 6, 7, 8, 9],"
                              + " \"max_tokens\": 4}"))
                  .build(),
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

  /**
   * With {@code --l3 memory} under small device and host pools: a prompt served once, then
   * pushed out of the device and the host by other prompts, comes back from the store, and both
   * the response and the metrics say so.
   */
  @Test
  void aRepeatedPrefixEvictedFromDeviceAndHostIsServedFromL3(@TempDir Path dir) throws Exception {
    Path config = dir.resolve("kvtier.properties");
    // 16 device pages of 4 tokens (64 tokens) and 20 host pages: one 40-token prompt fills most
    // of the device, and two more push the first out of both tiers.
    Files.writeString(
        config,
        "kvtier.device=sim\nkvtier.host=sim\nkvtier.page-size=4\n"
            + "kvtier.device-pages=16\nkvtier.host-pages=20\nkvtier.write-policy=write_through\n");
    ServeCommand command = new ServeCommand();
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(out, true));
    AtomicInteger status = new AtomicInteger(-1);
    Thread running =
        Thread.ofPlatform()
            .start(
                () ->
                    status.set(
                        cli.execute(
                            "--port",
                            "0",
                            "--config",
                            config.toString(),
                            "--l3",
                            "memory",
                            "--l3-mib",
                            "16",
                            "--l3-prefetch-threshold",
                            "4",
                            "--l3-prefetch-policy",
                            "wait_complete")));
    CompletionServer server;
    while ((server = command.server()) == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
      Thread.sleep(5);
    }
    URI base = URI.create("http://127.0.0.1:" + server.address().getPort());

    String again;
    String metrics;
    try (HttpClient client = HttpClient.newHttpClient()) {
      String prompt = prompt(0);
      assertThat(complete(client, base, prompt)).contains("\"cached_tokens\":0");
      for (int other = 1; other <= 5; other++) {
        complete(client, base, prompt(other));
      }
      again = complete(client, base, prompt);
      metrics =
          client
              .send(
                  HttpRequest.newBuilder(base.resolve("/metrics")).GET().build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
    }
    command.stop();
    running.join();

    assertThat(status.get()).isZero();
    assertThat(out.toString()).contains("L3 memory, 16 MiB, wait_complete prefetch of 4+ tokens");
    long l3 = number(again, "\"l3\":(\\d+)");
    assertThat(l3).as("tokens served from L3 in %s", again).isPositive();
    assertThat(number(again, "\"cached_tokens\":(\\d+)")).isGreaterThanOrEqualTo(l3);
    assertThat(
            (long) Double.parseDouble(metricValue(metrics, "kvtier_cache_hits_total{tier=\"l3\"}")))
        .isEqualTo(l3);
    assertThat(
            Double.parseDouble(
                metricValue(metrics, "kvtier_l3_store_reads_total{outcome=\"hit\"}")))
        .isPositive();
  }

  /** 40 tokens, distinct for each {@code n}. */
  private static String prompt(int n) {
    StringBuilder s = new StringBuilder("[");
    for (int i = 0; i < 40; i++) {
      s.append(i == 0 ? "" : ", ").append((n * 40 + i) % 512);
    }
    return s.append(']').toString();
  }

  private static String complete(HttpClient client, URI base, String prompt) throws Exception {
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"model\": \"kvtier-tiny\", \"prompt\": "
                            + prompt
                            + ", \"max_tokens\": 4}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return r.body();
  }

  private static long number(String body, String regex) {
    Matcher m = Pattern.compile(regex).matcher(body);
    assertThat(m.find()).as("%s in %s", regex, body).isTrue();
    return Long.parseLong(m.group(1));
  }

  private static String metricValue(String exposition, String series) {
    return exposition
        .lines()
        .filter(l -> l.startsWith(series + " "))
        .findFirst()
        .map(l -> l.substring(series.length() + 1).strip())
        .orElseThrow(() -> new AssertionError(series + " not in the metrics:\n" + exposition));
  }

  @Test
  void aConfigThatChangesTheModelsLayoutIsRejected(@TempDir Path dir) throws Exception {
    Path config = dir.resolve("bad.properties");
    Files.writeString(config, "kvtier.layers=4\n");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();

    int status =
        KvTierCli.run(
            new PrintWriter(out),
            new PrintWriter(err),
            "serve",
            "--port",
            "0",
            "--config",
            config.toString());

    assertThat(status).isEqualTo(KvTierCli.EXIT_FAILURE);
    assertThat(err.toString())
        .contains("kvtier.layers=4")
        .contains("needs kvtier.layers=2")
        .doesNotContain("\tat ");
  }

  @Test
  void helpListsTheEndpointsAndOptions() {
    StringWriter out = new StringWriter();

    int status =
        KvTierCli.run(new PrintWriter(out), new PrintWriter(new StringWriter()), "serve", "--help");

    assertThat(status).isZero();
    assertThat(out.toString())
        .contains("POST /v1/completions")
        .contains("POST /v1/chat/completions")
        .contains("--api-key")
        .contains("--served-model-name")
        .contains("--port")
        .contains("--bind")
        .contains("--config")
        .contains("GET /metrics")
        .contains("--l3")
        .contains("--l3-dir")
        .contains("--l3-mib");
  }

  @Test
  void anL3DirectoryWithoutTheFileStoreIsRejected(@TempDir Path dir) {
    StringWriter err = new StringWriter();

    int status =
        KvTierCli.run(
            new PrintWriter(new StringWriter()),
            new PrintWriter(err),
            "serve",
            "--port",
            "0",
            "--l3",
            "memory",
            "--l3-dir",
            dir.toString());

    assertThat(status).isEqualTo(KvTierCli.EXIT_FAILURE);
    assertThat(err.toString())
        .contains("--l3-dir=" + dir)
        .contains("add --l3 file")
        .doesNotContain("\tat ");
  }

  @Test
  void aGgufModelWhoseContextDoesNotFitTheDevicePoolExits2SayingWhatToGive(@TempDir Path dir)
      throws Exception {
    Path model = io.kvtier.testkit.SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
    Path config = dir.resolve("kvtier.properties");
    Files.writeString(config, "kvtier.page-size=16\nkvtier.device-pages=8\n");

    CliRun run = serve("--model", model.toString(), "--config", config.toString(), "--port", "0");

    assertThat(run.status()).as(run.err()).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(run.firstErrLine())
        .startsWith(
            "kvtier serve: the device pool holds 128 tokens (kvtier.device-pages=8 pages of 16),"
                + " less than one sequence of the model's context of 512 tokens: give"
                + " kvtier.device-pages of at least 32, or --max-context 128 or less");
    assertThat(run.err().lines().count()).as(run.err()).isEqualTo(1);
  }

  @Test
  void aGgufModelWhoseKvHeadsDoNotSplitOverTheRanksExits2WithOneLine() {
    Path model = io.kvtier.testkit.SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");

    CliRun run = serve("--model", model.toString(), "--ranks", "3", "--port", "0");

    assertThat(run.status()).as(run.err()).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(run.firstErrLine())
        .isEqualTo(
            "kvtier serve: ranks=3 does not divide tinyllamas-stories-260k's 4 KV heads: each"
                + " rank holds an equal share of the KV heads; use a divisor of 4"
                + " (kvtier.ranks); see kvtier serve --help");
    assertThat(run.err().lines().count()).as(run.err()).isEqualTo(1);
  }

  @Test
  void aContextParallelGroupWhoseTurnDoesNotDivideThePageExits2NamingTheOptions() {
    Path model = io.kvtier.testkit.SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");

    CliRun run =
        serve(
            "--model",
            model.toString(),
            "--ranks",
            "8",
            "--parallel",
            "cp",
            "--cp-interleave",
            "4",
            "--port",
            "0");

    assertThat(run.status()).as(run.err()).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(run.firstErrLine())
        .isEqualTo(
            "kvtier serve: --parallel cp over 8 ranks with interleave 4 needs a page size that is"
                + " a multiple of ranks x interleave = 32, so that each rank holds the same share"
                + " of every page; kvtier.page-size is 16: change kvtier.page-size, kvtier.ranks"
                + " or kvtier.cp-interleave; see kvtier serve --help");
    assertThat(run.err().lines().count()).as(run.err()).isEqualTo(1);
  }

  /**
   * stories260K context parallel on 4 rank threads, one position per turn and then blocks of 2:
   * the greedy completions (text, then a prompt whose first pages the first left cached, then BOS
   * alone) are those of one rank.
   */
  @Test
  void aContextParallelGroupAnswersTheOneRankGreedyCompletions(@TempDir Path dir) throws Exception {
    Path model = io.kvtier.testkit.SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
    Path config = dir.resolve("kvtier.properties");
    Files.writeString(config, "kvtier.page-size=8\nkvtier.device-pages=40\nkvtier.host-pages=80\n");
    List<String> options =
        List.of(
            "--port",
            "0",
            "--model",
            model.toString(),
            "--max-context",
            "128",
            "--config",
            config.toString());
    List<String> requests =
        List.of(
            "/v1/completions {\"model\": \"tinyllamas-stories-260k\", \"prompt\": \"Once upon a"
                + " time, there was a little girl\", \"max_tokens\": 12}",
            "/v1/completions {\"model\": \"tinyllamas-stories-260k\", \"prompt\": \"Once upon a"
                + " time, there was a little girl named Lily. She loved\", \"max_tokens\": 12}",
            "/v1/completions {\"model\": \"tinyllamas-stories-260k\", \"prompt\": [1],"
                + " \"max_tokens\": 12}");
    Map<String, Object> oneRank = ServedCompletions.ofOneRank(options, requests);
    for (String interleave : List.of("1", "2")) {
      List<String> cp = new ArrayList<>(options);
      cp.addAll(List.of("--ranks", "4", "--parallel", "cp", "--cp-interleave", interleave));
      assertThat(ServedCompletions.ofOneRank(cp, requests))
          .as("4 ranks cp, interleave %s", interleave)
          .isEqualTo(oneRank);
    }
  }

  /**
   * The metrics say what a rank's pools hold per token: stories260K's 5 layers x 2 x 4 heads x 8
   * floats x 4 bytes = 1,280 bytes on one rank, a quarter of it on each of 4 cp ranks.
   */
  @Test
  void theMetricsGiveARanksKvBytesPerToken() throws Exception {
    Path model = io.kvtier.testkit.SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
    for (String ranks : List.of("1", "4")) {
      ServeCommand command = new ServeCommand();
      StringWriter out = new StringWriter();
      CommandLine cli = new CommandLine(command);
      cli.setOut(new PrintWriter(out, true));
      cli.setErr(new PrintWriter(out, true));
      AtomicInteger status = new AtomicInteger(-1);
      Thread running =
          Thread.ofPlatform()
              .start(
                  () ->
                      status.set(
                          cli.execute(
                              "--port",
                              "0",
                              "--model",
                              model.toString(),
                              "--ranks",
                              ranks,
                              "--parallel",
                              "cp",
                              "--max-context",
                              "128",
                              "--device-pages",
                              "16")));
      CompletionServer server;
      while ((server = command.server()) == null) {
        assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
        Thread.sleep(5);
      }
      URI base = URI.create("http://127.0.0.1:" + server.address().getPort());
      String metrics;
      try (HttpClient client = HttpClient.newHttpClient()) {
        metrics =
            client
                .send(
                    HttpRequest.newBuilder(base.resolve("/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString())
                .body();
      } finally {
        command.stop();
        running.join();
      }
      assertThat(status.get()).as(out.toString()).isZero();
      assertThat(metrics.lines().filter(l -> l.startsWith("kvtier_kv_bytes_per_token ")))
          .as(ranks + " ranks")
          .containsExactly("kvtier_kv_bytes_per_token " + (ranks.equals("1") ? "1280.0" : "320.0"));
    }
  }

  @Test
  void theTinyTransformerRefusesContextParallelism() {
    CliRun run = serve("--ranks", "2", "--parallel", "cp", "--port", "0");

    assertThat(run.status()).as(run.err()).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(run.firstErrLine())
        .startsWith("kvtier serve: kvtier.parallel=cp: ")
        .contains("splits over ranks by its KV heads only");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      --port 70000       | --port=70000 must be between 0 and 65535
      --port -1          | --port=-1 must be between 0 and 65535
      --queue 0          | --queue=0 must be at least 1
      --max-prefill-tokens 0 | --max-prefill-tokens=0 must be at least 1 (leave it out for no budget)
      --read-timeout 0   | --read-timeout=0 must be at least 1 second
      --request-timeout 0 | --request-timeout=0 must be at least 1 second
      --bind nosuchhost.invalid | --bind=nosuchhost.invalid is not a known host name or address
      --max-context 0    | --max-context=0 must be at least 1
      --parallel dp      | kvtier.parallel=dp is neither tp (a share of the KV heads per rank) nor cp (a share of the positions per rank): set --parallel (kvtier.parallel) to tp or cp
      --parallel cp --cp-interleave 0 | kvtier.cp-interleave=0 must be >= 1: the positions a rank takes per turn under --parallel cp
      --parallel tp --cp-interleave 2 | kvtier.cp-interleave=2 is for --parallel cp (kvtier.parallel=cp) only
      --on-load-failure retry | --on-load-failure retry is not a policy kvtier knows: use recompute or fail
      --verify-restores never | --verify-restores never is not a check kvtier knows: use checksum or recompute
      --ranks 3          | ranks=3 does not divide the tiny transformer's 4 attention heads
      --model no-such-model.gguf | --model no-such-model.gguf: model gguf: file=no-such-model.gguf does not exist or is not a file
      --model pom.xml    | --model pom.xml: model gguf: file=pom.xml is not a GGUF file this model runs
      --model x.gguf --model-layers full | --model-layers is an option of the tiny transformer, but --model is x.gguf
      --model x.gguf --swa-cache windows | --swa-cache is an option of the tiny transformer, but --model is x.gguf
      --speculative draft-layer | --speculative needs a GGUF model (--model FILE.gguf): the tiny transformer has no draft
      --num-speculative-tokens 3 | --num-speculative-tokens needs a GGUF model (--model FILE.gguf)
      --kv-type f16      | --kv-type needs a GGUF model (--model FILE.gguf): the tiny transformer's K/V is kvtier.dtype-bytes of its config
      --model x.gguf --num-speculative-tokens 3 | --num-speculative-tokens=3 without --speculative: give --speculative draft-layer too, or drop it
      """)
  void anUnusableOptionExits2WithOneClearLine(String args, String message) {
    assertServeUsage(serve(args.split(" ")), message);
  }

  @Test
  void aPortInUseExits2SayingWhatToDo() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      CliRun run = serve("--port", Integer.toString(taken.getLocalPort()));

      assertThat(run.status()).as(run.err()).isEqualTo(ServeCommand.EXIT_USAGE);
      assertThat(run.firstErrLine())
          .startsWith("kvtier serve: cannot listen on 127.0.0.1:" + taken.getLocalPort())
          .contains("choose another --port, or 0 for a free one");
      assertThat(run.err().lines().count()).as(run.err()).isEqualTo(1);
    }
  }

  /** {@code --l3 file} without a directory makes a temporary one and deletes it at stop. */
  @Test
  void theFileStoresTemporaryDirectoryIsDeletedAtStop() throws Exception {
    ServeCommand command = new ServeCommand();
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(out, true));
    AtomicInteger status = new AtomicInteger(-1);
    Thread running =
        Thread.ofPlatform().start(() -> status.set(cli.execute("--port", "0", "--l3", "file")));
    CompletionServer server;
    while ((server = command.server()) == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
      Thread.sleep(5);
    }
    // The line is printed just after the server is published, and may be seen half written.
    Pattern deleted = Pattern.compile(" in (\\S+) \\(deleted at stop\\)");
    Matcher at = deleted.matcher(out.toString());
    for (long end = System.nanoTime() + 10_000_000_000L;
        !at.find() && System.nanoTime() < end;
        at = deleted.matcher(out.toString())) {
      Thread.sleep(5);
    }
    at = deleted.matcher(out.toString());
    assertThat(at.find()).as(out.toString()).isTrue();
    Path store = Path.of(at.group(1));
    assertThat(store).isDirectory();
    assertThat(store.getFileName().toString()).startsWith(ServeCommand.TEMPORARY_STORE_PREFIX);
    URI base = URI.create("http://127.0.0.1:" + server.address().getPort());
    try (HttpClient client = HttpClient.newHttpClient()) {
      complete(client, base, prompt(3));
    }

    command.stop();
    running.join();

    assertThat(status.get()).isZero();
    assertThat(store).doesNotExist();
  }

  /** A directory given with {@code --l3-dir} is the user's: it stays. */
  @Test
  void aGivenStoreDirectoryIsKept(@TempDir Path dir) throws Exception {
    ServeCommand command = new ServeCommand();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(new StringWriter(), true));
    Thread running =
        Thread.ofPlatform()
            .start(() -> cli.execute("--port", "0", "--l3", "file", "--l3-dir", dir.toString()));
    while (command.server() == null) {
      assertThat(running.isAlive()).isTrue();
      Thread.sleep(5);
    }
    command.stop();
    running.join();

    assertThat(dir).isDirectory();
  }

  @Test
  void aNonLoopbackAddressWithoutAKeyIsWarnedAbout() throws Exception {
    assertThat(startupErrors("--port", "0", "--bind", "0.0.0.0"))
        .contains("warning: listening on 0.0.0.0 without an API key")
        .contains("set --api-key or KVTIER_API_KEY");
  }

  /** What serve writes to standard error between its start and a stop, for {@code args}. */
  private static String startupErrors(String... args) throws Exception {
    ServeCommand command = new ServeCommand();
    StringWriter err = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(new StringWriter(), true));
    cli.setErr(new PrintWriter(err, true));
    Thread running = Thread.ofPlatform().start(() -> cli.execute(args));
    while (command.server() == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", err).isTrue();
      Thread.sleep(5);
    }
    command.stop();
    running.join();
    return err.toString();
  }

  @Test
  void anL3UnderAHostTierNoLargerThanTheDevicePoolIsWarnedAbout(@TempDir Path dir)
      throws Exception {
    Path config = dir.resolve("small-host.properties");
    Files.writeString(config, "kvtier.device-pages=64\nkvtier.host-pages=64\n");
    assertThat(startupErrors("--port", "0", "--config", config.toString(), "--l3", "memory"))
        .contains(
            "warning: the host tier (kvtier.host-pages=64) is no larger than the device pool"
                + " (kvtier.device-pages=64)")
        .contains("give kvtier.host-pages more pages than kvtier.device-pages");
    // The defaults, and the same pools without a store, are not warned about.
    assertThat(startupErrors("--port", "0", "--l3", "memory")).doesNotContain("host tier");
    assertThat(startupErrors("--port", "0", "--config", config.toString()))
        .doesNotContain("host tier");
  }

  @Test
  void swaWindowsThatCostMoreThanThePagesTheyReplaceAreWarnedAbout(@TempDir Path dir)
      throws Exception {
    Path config = dir.resolve("small-pages.properties");
    Files.writeString(config, "kvtier.page-size=4\n");
    // Pages of 4 tokens: a window of 63 positions takes 16 one-block slots, a page saves 1 block.
    assertThat(
            startupErrors(
                "--port",
                "0",
                "--config",
                config.toString(),
                "--model-layers",
                "full,swa:64",
                "--swa-cache",
                "windows",
                "--snapshot-interval",
                "1"))
        .contains(
            "warning: --swa-cache windows saves no device memory here: a snapshot every 1 pages"
                + " (kvtier.snapshot-interval-pages) carries the SWA windows in 16 page slots")
        .contains("give --snapshot-interval 17 or more, or --swa-cache pages");
    // A mix whose pages hold one block either way.
    assertThat(startupErrors("--port", "0", "--model-layers", "swa:8", "--swa-cache", "windows"))
        .contains("a page of swa:8 has one block either way: use --swa-cache pages");
    // The defaults (16-token pages, a snapshot every 8 pages) save: 8 + 4 blocks against 16.
    assertThat(
            startupErrors("--port", "0", "--model-layers", "full,swa:64", "--swa-cache", "windows"))
        .doesNotContain("saves no device memory");
  }
}
