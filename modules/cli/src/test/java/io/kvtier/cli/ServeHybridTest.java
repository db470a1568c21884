package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.core.config.LayerMix;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.server.CompletionServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * {@code kvtier serve --model-layers}: a hybrid tiny model served over HTTP answers every turn of
 * a multi-turn workload with the cache-off model's tokens; {@code usage}'s {@code cached_tokens}
 * and {@code kvtier_prefix_cache_hits_total} are the usable count (the match up to its deepest recurrent-state snapshot with a recurrent layer),
 * {@code kvtier.matched_tokens} and {@code kvtier_prefix_cache_matched_total} the match; an L3
 * store shared by two mixes of one seed gives neither the other's pages.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class ServeHybridTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int OUTPUT = 5;

  @ParameterizedTest(name = "{0} on {1} ranks, SWA {2}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      full,swa:4             | 1 | pages
      full,swa:4             | 2 | pages
      full,recurrent         | 1 | pages
      full,recurrent         | 2 | pages
      swa:4*2,recurrent,full | 1 | pages
      swa:4*2,recurrent,full | 2 | pages
      full,swa:4             | 1 | windows
      full,swa:4             | 2 | windows
      swa:4*2,recurrent,full | 2 | windows
      """)
  void aHybridMixAnswersLikeTheCacheOffModelAndReportsUsableAndMatchedTokens(
      String mixText, int ranks, String swaCache, @TempDir Path dir) throws Exception {
    LayerMix mix = LayerMix.parse(mixText, "test");
    boolean windows = swaCache.equals("windows");
    NoCacheRunner reference =
        new NoCacheRunner(new TinyTransformer(ModelConfig.DEFAULTS.withSeed(7).withLayerMix(mix)));
    Path config = dir.resolve("kvtier.properties");
    Files.writeString(
        config,
        "kvtier.device=sim\nkvtier.host=sim\nkvtier.page-size=4\n"
            + "kvtier.device-pages=128\nkvtier.host-ratio=4\nkvtier.write-policy=write_through\n");

    long cached = 0;
    long matched = 0;
    String metrics;
    String startup;
    try (Served served =
        Served.start(
            "--config",
            config.toString(),
            "--ranks",
            Integer.toString(ranks),
            "--model-seed",
            "7",
            "--model-layers",
            mixText,
            "--swa-cache",
            swaCache)) {
      for (int[] prompt : multiTurnPrompts(reference)) {
        JsonNode answer = served.complete(prompt);
        assertThat(tokenIds(answer))
            .as("the tokens of a %d-token prompt", prompt.length)
            .containsExactly(reference.generate(prompt, OUTPUT));
        int usable = answer.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
        int match = answer.get("kvtier").get("matched_tokens").asInt();
        JsonNode tiers = answer.get("kvtier").get("cached_tokens");
        assertThat(match)
            .isEqualTo(
                tiers.get("device").asInt() + tiers.get("host").asInt() + tiers.get("l3").asInt());
        // Without a recurrent layer (or SWA windows) every matched token is usable; with one, the
        // match up to its deepest state snapshot (HYBRID.md §4, §5).
        if (mix.needsSnapshots(windows)) {
          assertThat(usable).as(answer.toString()).isBetween(0, match);
        } else {
          assertThat(usable).as(answer.toString()).isEqualTo(match);
        }
        cached += usable;
        matched += match;
      }
      metrics = served.get("/metrics");
      startup = served.out();
      JsonNode models = JSON.readTree(served.get("/v1/models"));
      assertThat(models.get("data").get(0).get("kvtier").get("layers").asText())
          .isEqualTo(mix.toString());
    }

    assertThat(matched).as("the turns resend their history").isPositive();
    // The tail snapshot at each turn's end lets the next turn resume: usable is never 0.
    assertThat(cached).as("usable with recurrent-state snapshots").isPositive();
    assertThat(metric(metrics, "kvtier_prefix_cache_hits_total")).isEqualTo(cached);
    assertThat(metric(metrics, "kvtier_prefix_cache_matched_total")).isEqualTo(matched);
    assertThat(startup).contains("layers " + mix + (windows ? ", SWA windows;" : ";"));
  }

  /**
   * Models of one seed and different mixes over one file store: each is served its own pages
   * only (the store's model id names the mix), so each answers as its own cache-off model; a
   * second server of the same mix is served the first's pages from the store.
   */
  @Test
  void anL3StoreSharedByTwoMixesOfOneSeedServesEachOnlyItsOwnPages(@TempDir Path dir)
      throws Exception {
    Path store = dir.resolve("store");
    Path config = dir.resolve("kvtier.properties");
    Files.writeString(
        config,
        "kvtier.device=sim\nkvtier.host=sim\nkvtier.page-size=4\n"
            + "kvtier.device-pages=64\nkvtier.host-ratio=2\nkvtier.write-policy=write_through\n");
    int[] prompt = IntStream.range(0, 40).map(i -> (i * 37 + 11) % 256).toArray();
    // The same mix with SWA windows has pages of another layout: a store must not mix them.
    String[] mixes = {"full,full", "swa:2,full", "swa:2,full windows"};

    for (int round = 0; round < 2; round++) {
      for (String entry : mixes) {
        String mixText = entry.split(" ")[0];
        String swaCache = entry.endsWith(" windows") ? "windows" : "pages";
        int[] expected =
            new NoCacheRunner(
                    new TinyTransformer(
                        ModelConfig.DEFAULTS.withLayerMix(LayerMix.parse(mixText, "test"))))
                .generate(prompt, OUTPUT);
        JsonNode answer;
        try (Served served =
            Served.start(
                "--config",
                config.toString(),
                "--model-layers",
                mixText,
                "--swa-cache",
                swaCache,
                "--l3",
                "file",
                "--l3-dir",
                store.toString(),
                "--l3-prefetch-threshold",
                "4",
                "--l3-prefetch-policy",
                "wait_complete")) {
          answer = served.complete(prompt);
        }
        assertThat(tokenIds(answer)).as("%s, round %d", entry, round).containsExactly(expected);
        int fromL3 = answer.get("kvtier").get("cached_tokens").get("l3").asInt();
        if (round == 0) {
          // The other mixes' pages are in the store under the same seed: none may be served.
          assertThat(fromL3).as("%s, first server: %s", entry, answer).isZero();
        } else {
          assertThat(fromL3).as("%s, second server: %s", entry, answer).isPositive();
        }
      }
    }
  }

  /** A bad layer option exits 2 with one line on stderr that names the option and the fix. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("badLayerOptions")
  void aBadLayerOptionExits2WithOneLineNamingIt(List<String> options, String line) {
    List<String> args = new ArrayList<>(List.of("serve", "--port", "0"));
    args.addAll(options);

    CliRun run = CliRun.run(args.toArray(String[]::new));

    assertThat(run.status()).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(run.err().lines().toList())
        .containsExactly("kvtier serve: " + line + "; see kvtier serve --help");
  }

  static Stream<Arguments> badLayerOptions() {
    return Stream.of(
        Arguments.of(
            List.of("--model-layers", "full,swa"),
            "element 2 of --model-layers='full,swa' is 'swa': an SWA layer needs its window, as"
                + " in swa:64"),
        Arguments.of(
            List.of("--model-layers", "full,recurrent", "--snapshot-interval", "0"),
            "--snapshot-interval=0 must be at least 1: the pages between two recurrent-state"
                + " snapshots"),
        Arguments.of(
            List.of("--model-layers", "full,swa:4", "--swa-cache", "window"),
            "--swa-cache=window is not an SWA cache mode: give pages (SWA layers keep every"
                + " page, the default) or windows (SWA layers keep their last W-1 positions in the"
                + " snapshots)"),
        Arguments.of(
            List.of("--model-layers", "full,recurrent", "--swa-cache", "windows"),
            "--swa-cache windows keeps the KV of swa:W layers as windows, but --model-layers"
                + " full,recurrent has none: drop --swa-cache, or give a mix with an SWA layer"
                + " such as full,swa:64"));
  }

  @Test
  void swaWindowsThatDoNotFitTheDevicePoolEndServeWithWhatToGive(@TempDir Path dir)
      throws Exception {
    Path config = dir.resolve("small.properties");
    Files.writeString(config, "kvtier.page-size=4\nkvtier.device-pages=64\n");

    CliRun run =
        CliRun.run(
            "serve",
            "--port",
            "0",
            "--config",
            config.toString(),
            "--model-layers",
            "full,swa:1000",
            "--swa-cache",
            "windows");

    assertThat(run.status()).isNotZero();
    // 999 positions of K and V at 256 bytes in slots of one 2 KiB block: 250 slots.
    assertThat(run.err())
        .contains(
            "a state snapshot of the model's layers full,swa:1000 (with their SWA windows) takes"
                + " 250 page slots, but the device pool has 64 pages (kvtier.device-pages): give"
                + " kvtier.device-pages well above 250, larger pages, or keep SWA pages"
                + " (--swa-cache pages)");
  }

  @Test
  void helpDescribesTheLayerMix() {
    StringWriter out = new StringWriter();

    int status =
        KvTierCli.run(new PrintWriter(out), new PrintWriter(new StringWriter()), "serve", "--help");

    assertThat(status).isZero();
    assertThat(out.toString())
        .contains("--model-layers=MIX")
        .contains("swa:W")
        .contains("--swa-cache=MODE");
  }

  /**
   * Two conversations of three turns over one system prompt, each turn the history (with the
   * reference's answers) and a new user message; the second conversation's first turn resends the
   * first's.
   */
  private static List<int[]> multiTurnPrompts(NoCacheRunner reference) {
    Random random = new Random(22);
    int[] system = random.ints(13, 0, 256).toArray();
    List<int[]> prompts = new ArrayList<>();
    int[] firstTurn = null;
    for (int conversation = 0; conversation < 2; conversation++) {
      int[] history = system;
      for (int turn = 0; turn < 3; turn++) {
        int[] prompt =
            conversation == 1 && turn == 0
                ? firstTurn
                : concat(history, random.ints(3 + random.nextInt(6), 0, 256).toArray());
        if (firstTurn == null) {
          firstTurn = prompt;
        }
        prompts.add(prompt);
        history = concat(prompt, reference.generate(prompt, OUTPUT));
      }
    }
    return prompts;
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static int[] tokenIds(JsonNode answer) {
    JsonNode ids = answer.get("choices").get(0).get("token_ids");
    int[] out = new int[ids.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = ids.get(i).asInt();
    }
    return out;
  }

  private static long metric(String exposition, String series) {
    return exposition
        .lines()
        .filter(l -> l.startsWith(series + " "))
        .findFirst()
        .map(l -> (long) Double.parseDouble(l.substring(series.length() + 1).strip()))
        .orElseThrow(() -> new AssertionError(series + " not in the metrics:\n" + exposition));
  }

  /** A {@code kvtier serve} running in a thread of this JVM on a free port. */
  private record Served(
      ServeCommand command,
      Thread thread,
      AtomicInteger status,
      StringWriter output,
      URI base,
      HttpClient client)
      implements AutoCloseable {

    static Served start(String... args) throws InterruptedException {
      ServeCommand command = new ServeCommand();
      StringWriter out = new StringWriter();
      CommandLine cli = new CommandLine(command);
      cli.setOut(new PrintWriter(out, true));
      cli.setErr(new PrintWriter(out, true));
      String[] all = Arrays.copyOf(new String[] {"--port", "0"}, 2 + args.length);
      System.arraycopy(args, 0, all, 2, args.length);
      AtomicInteger status = new AtomicInteger(-1);
      Thread running = Thread.ofPlatform().start(() -> status.set(cli.execute(all)));
      CompletionServer server;
      while ((server = command.server()) == null) {
        assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
        Thread.sleep(5);
      }
      while (!out.toString().contains("listening on")) {
        Thread.sleep(5); // the line is printed just after the server is published
      }
      return new Served(
          command,
          running,
          status,
          out,
          URI.create("http://127.0.0.1:" + server.address().getPort()),
          HttpClient.newHttpClient());
    }

    JsonNode complete(int[] prompt) throws Exception {
      HttpResponse<String> r =
          client.send(
              HttpRequest.newBuilder(base.resolve("/v1/completions"))
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"model\": \"kvtier-tiny\", \"prompt\": "
                              + Arrays.toString(prompt)
                              + ", \"max_tokens\": "
                              + OUTPUT
                              + "}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      return JSON.readTree(r.body());
    }

    String get(String path) throws Exception {
      return client
          .send(
              HttpRequest.newBuilder(base.resolve(path)).GET().build(),
              HttpResponse.BodyHandlers.ofString())
          .body();
    }

    String out() {
      return output.toString();
    }

    @Override
    public void close() throws InterruptedException {
      client.close();
      command.stop();
      thread.join();
      assertThat(status.get()).as(output.toString()).isZero();
    }
  }
}
