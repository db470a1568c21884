package io.kvtier.cli;

import static io.kvtier.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code kvtier simulate} and {@code kvtier replay} with {@code --layer-mix} and {@code
 * --snapshot-interval} (docs/HYBRID.md §8): usable beside matched hits in the summary, the JSON
 * and the replay table; every usage error names the option.
 */
@Timeout(180)
class SimulateHybridTest {
  private static final String SMALL_WORKLOAD =
      "multiturn:conversations=8,turns=4,first=48,answer=8,question=16";

  @SuppressWarnings("unchecked")
  private static Map<String, Object> json(Path file) throws IOException {
    return (Map<String, Object>) TestJson.parse(Files.readString(file, StandardCharsets.UTF_8));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> object(Object o) {
    return (Map<String, Object>) o;
  }

  private static long total(Map<String, Object> tiers) {
    return (Long) tiers.get("device") + (Long) tiers.get("host") + (Long) tiers.get("l3");
  }

  private static CliRun simulate(Path json, String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "simulate",
                "--workload",
                SMALL_WORKLOAD,
                "--page-size",
                "4",
                "--device-pages",
                "64",
                "--host-ratio",
                "3",
                "--ticks",
                "300",
                "--json",
                json.toString()));
    if (!List.of(extra).contains("--ranks")) {
      args.addAll(List.of("--ranks", "2"));
    }
    args.addAll(List.of(extra));
    return run(args.toArray(String[]::new));
  }

  @Test
  void anSwaMixReportsEveryMatchedTokenUsable(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("swa.json");
    CliRun run = simulate(file, "--layer-mix", "full,swa:64");

    assertThat(run.status()).as(run.out() + run.err()).isZero();
    assertThat(run.out())
        .contains("layers    full,swa:64: no recurrent layer, no snapshots")
        .containsPattern("tier +hit tokens +hit rate +usable +usable rate")
        .contains("(100.0%) (no recurrent layer, and SWA layers keep every page: all usable)")
        .doesNotContain("snapshot resumes verified")
        .contains("result    PASS");
    Map<String, Object> j = json(file);
    assertThat(j.get("usableHitTokens")).isEqualTo(j.get("hitTokens"));
    assertThat(total(object(j.get("hitTokens")))).isPositive();
    assertThat(j).containsEntry("usableOfMatched", 1.0).containsEntry("snapshotsVerified", 0L);
  }

  @ParameterizedTest(name = "{0} ranks, {1}")
  @CsvSource({"1, write_through", "4, write_back"})
  void aRecurrentMixPassesEveryCheckAndReportsUsableWithinMatched(
      int ranks, String write, @TempDir Path dir) throws IOException {
    Path file = dir.resolve("recurrent.json");
    CliRun run =
        simulate(
            file,
            "--ranks",
            String.valueOf(ranks),
            "--write-policy",
            write,
            "--l3",
            "memory",
            "--l3-prefetch-threshold",
            "8",
            "--layer-mix",
            "full,recurrent",
            "--snapshot-interval",
            "2");

    assertThat(run.status()).as(run.out() + run.err()).isZero();
    assertThat(run.out())
        .contains(
            "layers    full,recurrent: recurrent-state snapshots of 1 page slot every 2 pages")
        .containsPattern("usable +\\d+ of \\d+ matched hit tokens \\(\\d+\\.\\d%\\) resumed from")
        .containsPattern("snapshot resumes verified [1-9]\\d*, snapshot mismatches 0")
        .contains("result    PASS");
    Map<String, Object> j = json(file);
    Map<String, Object> matched = object(j.get("hitTokens"));
    Map<String, Object> usable = object(j.get("usableHitTokens"));
    assertThat(total(usable)).isPositive().isLessThanOrEqualTo(total(matched));
    for (String tier : List.of("device", "host", "l3")) {
      assertThat((Long) usable.get(tier)).isLessThanOrEqualTo((Long) matched.get(tier));
    }
    assertThat(j)
        .containsEntry("snapshotMismatches", 0L)
        .containsEntry("kvMismatches", 0L)
        .containsEntry("leakedPages", 0L)
        .containsEntry("replicaDigestsEqual", true)
        .containsEntry("usableTokens", total(usable))
        .containsEntry("reusedTokens", total(usable));
    assertThat((Long) j.get("snapshotsVerified")).isPositive();
    assertThat((Double) j.get("usableOfMatched")).isPositive().isLessThanOrEqualTo(1.0);
  }

  /**
   * Hits that end inside shared system prompts (184 tokens: the hit ends at 16-token page 11),
   * each prompt prefilled in one chunk: with snapshots 32 pages apart none lies inside
   * a prompt, so nothing of the match is usable, and the summary and JSON say 0%, beside the
   * matched rate; 1 page apart the whole match is usable.
   */
  @Test
  void aZeroUsableHitRateIsPrintedBesideTheMatchedOne(@TempDir Path dir) throws IOException {
    Path sparse = dir.resolve("sparse.json");
    Path dense = dir.resolve("dense.json");
    String[] common = {
      "simulate",
      "--workload",
      "shared-prefix:groups=4,system=184,question=16,requests=24,output=4",
      "--chunk",
      "512",
      "--layer-mix",
      "full,recurrent",
      "--ticks",
      "200",
      "--snapshot-interval"
    };
    List<String> a = new ArrayList<>(List.of(common));
    a.addAll(List.of("32", "--json", sparse.toString()));
    List<String> b = new ArrayList<>(List.of(common));
    b.addAll(List.of("1", "--json", dense.toString()));
    CliRun zero = run(a.toArray(String[]::new));
    CliRun all = run(b.toArray(String[]::new));

    assertThat(zero.status()).as(zero.out() + zero.err()).isZero();
    assertThat(all.status()).as(all.out() + all.err()).isZero();
    Map<String, Object> z = json(sparse);
    long matched = total(object(z.get("hitTokens")));
    assertThat(matched).isPositive();
    assertThat(z).containsEntry("usableTokens", 0L).containsEntry("usableOfMatched", 0.0);
    assertThat(zero.out())
        .contains("usable    0 of " + matched + " matched hit tokens (0.0%)")
        .containsPattern("total +" + matched + " +\\d+\\.\\d% +0 +0\\.0%");
    Map<String, Object> d = json(dense);
    assertThat(d.get("usableTokens")).isEqualTo(total(object(d.get("hitTokens"))));
    assertThat((Long) d.get("usableTokens")).isPositive();
  }

  @Test
  void replayWithARecurrentMixSweepsTheIntervalAndReportsUsable(@TempDir Path dir)
      throws IOException {
    SharedTraces.assumeMooncakeSynthetic();
    Path file = dir.resolve("replay.json");
    CliRun run =
        run(
            "replay",
            "--workload",
            ReplayCommandTest.TRACE,
            "--requests",
            "300",
            "--page-size",
            "512",
            "--device-tokens",
            "500K",
            "--host-ratio",
            "4",
            "--layer-mix",
            "full,swa:64,recurrent",
            "--snapshot-interval",
            "1,8",
            "--json",
            file.toString());

    assertThat(run.status()).as(run.out() + run.err()).isZero();
    assertThat(run.out())
        .contains("layers: full,swa:64,recurrent: recurrent-state snapshots")
        .contains("use/hit");
    Map<String, Object> doc = object(TestJson.parse(Files.readString(file)));
    @SuppressWarnings("unchecked")
    List<Object> configurations = (List<Object>) doc.get("configurations");
    assertThat(configurations).hasSize(2);
    List<Long> intervals = new ArrayList<>();
    for (Object o : configurations) {
      Map<String, Object> c = object(o);
      intervals.add((Long) c.get("snapshotIntervalPages"));
      Map<String, Object> matched = object(c.get("hitTokens"));
      Map<String, Object> usable = object(c.get("usableHitTokens"));
      assertThat((Long) usable.get("total"))
          .isPositive()
          .isLessThanOrEqualTo((Long) matched.get("total"));
      assertThat(c.get("prefillTokensSaved")).isEqualTo(usable.get("total"));
    }
    assertThat(intervals).containsExactly(1L, 8L);
  }

  @Test
  void anAllFullMixIsTheRunWithoutAMix(@TempDir Path dir) throws IOException {
    Path none = dir.resolve("none.json");
    Path full = dir.resolve("full.json");
    CliRun plain = simulate(none);
    CliRun mixed = simulate(full, "--layer-mix", "full*3", "--l3", "memory");
    CliRun plainL3 = simulate(none, "--l3", "memory");

    assertThat(plain.status()).isZero();
    assertThat(plain.out()).doesNotContain("usable").doesNotContain("layers    ");
    assertThat(mixed.status()).as(mixed.out() + mixed.err()).isZero();
    assertThat(plainL3.status()).isZero();
    // The same decisions (and L3 keys) as no mix at all: the same digest.
    assertThat(json(full).get("replicaDigest")).isEqualTo(json(none).get("replicaDigest"));
    assertThat(mixed.out()).doesNotContain("usable");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "--layer-mix full,swa|element 2 of --layer-mix='full,swa' is 'swa'",
        "--layer-mix ''|--layer-mix is empty",
        "--layer-mix full,recurrent --snapshot-interval 0|--snapshot-interval=0 is out of range:"
            + " give 1 or more",
        "--snapshot-interval 4|--snapshot-interval=4 sets how often the cache snapshots recurrent"
            + " states (and SWA windows with --swa-cache windows), but no --layer-mix is given"
            + " (full attention only)",
        "--layer-mix full,swa:64 --snapshot-interval 4|--layer-mix full,swa:64 has no recurrent"
            + " layer and --swa-cache is pages: there is nothing to snapshot; drop"
            + " --snapshot-interval, or give a mix with a recurrent layer such as --layer-mix"
            + " full,recurrent, or keep SWA windows with --swa-cache windows",
        "--swa-cache windows|--swa-cache windows keeps the KV of SWA layers as windows in the"
            + " snapshots, but no --layer-mix is given (full attention only): drop --swa-cache, or"
            + " give a mix with an SWA layer such as --layer-mix full,swa:64",
        "--layer-mix full*3 --swa-cache windows|--layer-mix full,full,full has no swa:W layer:"
            + " drop --swa-cache",
        "--layer-mix full,recurrent --swa-cache windows --snapshot-interval 2|--layer-mix"
            + " full,recurrent has no swa:W layer: drop --swa-cache",
        "--layer-mix full,swa:64 --swa-cache ring|--swa-cache=ring is not an SWA cache mode:"
            + " give pages (SWA layers keep every page, the default) or windows",
        "--layer-mix full,swa:64 --swa-cache windows --device-pages 4|--device-pages=4 is too"
            + " small for --layer-mix full,swa:64 with --swa-cache windows: a snapshot of its SWA"
            + " windows takes 4 device page slot(s) beside the KV pages; give --device-pages 5",
        "--layer-mix full,recurrent --device-pages 1|--device-pages=1 is too small for"
            + " --layer-mix full,recurrent",
      })
  void aBadHybridOptionIsAUsageErrorNamingIt(String options, String message) {
    List<String> args = new ArrayList<>(List.of("simulate"));
    for (String a : options.split(" ")) {
      args.add(a.equals("''") ? "" : a);
    }
    CliRun run = run(args.toArray(String[]::new));

    assertThat(run.status()).as(run.out() + run.err()).isEqualTo(2);
    assertThat(run.firstErrLine()).contains("kvtier simulate: ").contains(message);
    assertThat(run.err()).contains("see `kvtier simulate --help`");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "--swa-cache windows|--swa-cache windows keeps the KV of SWA layers as windows in the"
            + " snapshots, but no --layer-mix is given (full attention only)",
        "--layer-mix full,recurrent --swa-cache windows|--layer-mix full,recurrent has no swa:W"
            + " layer: drop --swa-cache",
        "--layer-mix full --swa-cache windows|--layer-mix full has no swa:W layer",
        "--layer-mix full,swa:64 --swa-cache Windowz|--swa-cache=Windowz is not an SWA cache"
            + " mode",
        "--layer-mix full,swa:64 --snapshot-interval 1,8|--layer-mix full,swa:64 has no"
            + " recurrent layer and --swa-cache is pages: there is nothing to snapshot",
        "--layer-mix full,swa:64 --swa-cache windows --device-tokens 64|a device of 64 tokens"
            + " holds 4 page(s) of --page-size 16, too few for --layer-mix full,swa:64 with"
            + " --swa-cache windows, whose snapshots take 4 page slot(s) each",
      })
  void aBadSwaCacheInReplayIsAUsageErrorNamingIt(String options, String message) {
    List<String> args =
        new ArrayList<>(
            List.of("replay", "--workload", ReplayCommandTest.TRACE, "--requests", "5"));
    args.addAll(List.of(options.split(" ")));
    if (!args.contains("--device-tokens")) {
      args.addAll(List.of("--device-tokens", "100K"));
    }
    CliRun run = run(args.toArray(String[]::new));

    assertThat(run.status()).as(run.out() + run.err()).isEqualTo(2);
    assertThat(run.firstErrLine()).contains("kvtier replay: ").contains(message);
  }

  /** {@code kvtier simulate} on the small workload with 16-token pages, 2 ranks unless given. */
  private static CliRun simulate16(Path json, String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "simulate",
                "--workload",
                SMALL_WORKLOAD,
                "--page-size",
                "16",
                "--device-pages",
                "96",
                "--host-ratio",
                "3",
                "--ticks",
                "300",
                "--json",
                json.toString()));
    if (!List.of(extra).contains("--ranks")) {
      args.addAll(List.of("--ranks", "2"));
    }
    args.addAll(List.of(extra));
    return run(args.toArray(String[]::new));
  }

  /**
   * {@code --swa-cache windows}: an SWA mix takes snapshots of its windows (4 slots of 16-token
   * pages for a 64-token window: 63 positions), every resume is checked, and usable is within
   * matched in every tier.
   */
  @ParameterizedTest(name = "{0} ranks, {1}")
  @CsvSource({"1, write_through", "4, write_back"})
  void swaWindowsTakeSnapshotsAndPassEveryCheck(int ranks, String write, @TempDir Path dir)
      throws IOException {
    Path file = dir.resolve("windows.json");
    CliRun run =
        simulate16(
            file,
            "--ranks",
            String.valueOf(ranks),
            "--write-policy",
            write,
            "--l3",
            "memory",
            "--l3-prefetch-threshold",
            "16",
            "--layer-mix",
            "full,swa:64",
            "--swa-cache",
            "windows",
            "--snapshot-interval",
            "2");

    assertThat(run.status()).as(run.out() + run.err()).isZero();
    assertThat(run.out())
        .contains(
            "layers    full,swa:64: --swa-cache windows: pages hold the full-attention KV, SWA"
                + " windows go into snapshots of 4 page slots every 2 pages")
        .containsPattern("usable +\\d+ of \\d+ matched hit tokens \\(\\d+\\.\\d%\\) resumed from a")
        .contains("snapshot (SWA windows)")
        .containsPattern("snapshot resumes verified [1-9]\\d*, snapshot mismatches 0")
        .contains("result    PASS");
    Map<String, Object> j = json(file);
    Map<String, Object> matched = object(j.get("hitTokens"));
    Map<String, Object> usable = object(j.get("usableHitTokens"));
    assertThat(total(usable)).isPositive().isLessThanOrEqualTo(total(matched));
    for (String tier : List.of("device", "host", "l3")) {
      assertThat((Long) usable.get(tier)).isLessThanOrEqualTo((Long) matched.get(tier));
    }
    assertThat(j)
        .containsEntry("layerMix", "full,swa:64")
        .containsEntry("swaCache", "windows")
        .containsEntry("snapshotSlots", 4L)
        .containsEntry("snapshotIntervalPages", 2L)
        .containsEntry("snapshotMismatches", 0L)
        .containsEntry("kvMismatches", 0L)
        .containsEntry("leakedPages", 0L)
        .containsEntry("replicaDigestsEqual", true)
        .containsEntry("reusedTokens", total(usable));
    assertThat((Long) j.get("snapshotsVerified")).isPositive();
  }

  /**
   * Hits that end inside 184-token shared prompts (page 11 of 16 tokens), each prefilled in one
   * chunk: with SWA windows every 4 pages a hit is usable up to page 8 only, so usable is below
   * matched and above 0; with SWA pages (given or the default) the whole match is usable and the
   * run is the one without the option, to the digest.
   */
  @Test
  void swaWindowsCutAMatchAtItsDeepestSnapshotAndPagesDoNot(@TempDir Path dir) throws IOException {
    String[] common = {
      "simulate",
      "--workload",
      "shared-prefix:groups=4,system=184,question=16,requests=24,output=4",
      "--chunk",
      "512",
      "--layer-mix",
      "full,swa:64",
      "--ticks",
      "200",
      "--json"
    };
    Path windows = dir.resolve("windows.json");
    Path pages = dir.resolve("pages.json");
    Path plain = dir.resolve("plain.json");
    List<String> a = new ArrayList<>(List.of(common));
    a.addAll(List.of(windows.toString(), "--swa-cache", "windows", "--snapshot-interval", "4"));
    List<String> b = new ArrayList<>(List.of(common));
    b.addAll(List.of(pages.toString(), "--swa-cache", "pages"));
    List<String> c = new ArrayList<>(List.of(common));
    c.add(plain.toString());
    CliRun w = run(a.toArray(String[]::new));
    CliRun p = run(b.toArray(String[]::new));
    CliRun n = run(c.toArray(String[]::new));

    assertThat(w.status()).as(w.out() + w.err()).isZero();
    assertThat(p.status()).as(p.out() + p.err()).isZero();
    assertThat(n.status()).as(n.out() + n.err()).isZero();
    Map<String, Object> jw = json(windows);
    long matched = total(object(jw.get("hitTokens")));
    assertThat((Long) jw.get("usableTokens")).isPositive().isLessThan(matched);
    assertThat((Long) jw.get("snapshotsVerified")).isPositive();
    Map<String, Object> jp = json(pages);
    assertThat(jp.get("usableHitTokens")).isEqualTo(jp.get("hitTokens"));
    assertThat(total(object(jp.get("hitTokens")))).isPositive();
    assertThat(jp)
        .containsEntry("swaCache", "pages")
        .containsEntry("snapshotSlots", 0L)
        .containsEntry("usableOfMatched", 1.0);
    assertThat(p.out()).contains("SWA layers keep every page (--swa-cache pages)");
    assertThat(jp.get("replicaDigest")).isEqualTo(json(plain).get("replicaDigest"));
  }

  @Test
  void replayWithSwaWindowsSweepsTheIntervalAndReportsUsable(@TempDir Path dir) throws IOException {
    SharedTraces.assumeMooncakeSynthetic();
    Path file = dir.resolve("replay.json");
    CliRun run =
        run(
            "replay",
            "--workload",
            ReplayCommandTest.TRACE,
            "--requests",
            "300",
            "--page-size",
            "512",
            "--device-tokens",
            "500K",
            "--host-ratio",
            "4",
            "--layer-mix",
            "full,swa:64",
            "--swa-cache",
            "windows",
            "--snapshot-interval",
            "1,8",
            "--json",
            file.toString());

    assertThat(run.status()).as(run.out() + run.err()).isZero();
    assertThat(run.out())
        .contains(
            "layers: full,swa:64: --swa-cache windows: pages hold the full-attention KV, SWA"
                + " windows go into snapshots of 1 page slot every --snapshot-interval pages")
        .contains("use/hit");
    Map<String, Object> doc = object(TestJson.parse(Files.readString(file)));
    @SuppressWarnings("unchecked")
    List<Object> configurations = (List<Object>) doc.get("configurations");
    assertThat(configurations).hasSize(2);
    List<Long> intervals = new ArrayList<>();
    for (Object o : configurations) {
      Map<String, Object> c = object(o);
      intervals.add((Long) c.get("snapshotIntervalPages"));
      assertThat(c).containsEntry("snapshotSlots", 1L);
      Map<String, Object> matched = object(c.get("hitTokens"));
      Map<String, Object> usable = object(c.get("usableHitTokens"));
      assertThat((Long) usable.get("total"))
          .isPositive()
          .isLessThanOrEqualTo((Long) matched.get("total"));
      assertThat(c.get("prefillTokensSaved")).isEqualTo(usable.get("total"));
    }
    assertThat(intervals).containsExactly(1L, 8L);
    // With SWA pages the same mix takes no snapshots: one configuration, every hit usable.
    CliRun pages =
        run(
            "replay",
            "--workload",
            ReplayCommandTest.TRACE,
            "--requests",
            "300",
            "--page-size",
            "512",
            "--device-tokens",
            "500K",
            "--host-ratio",
            "4",
            "--layer-mix",
            "full,swa:64",
            "--json",
            file.toString());
    assertThat(pages.status()).as(pages.out() + pages.err()).isZero();
    Map<String, Object> p =
        object(
            ((List<?>) object(TestJson.parse(Files.readString(file))).get("configurations"))
                .get(0));
    assertThat(p).containsEntry("snapshotSlots", 0L);
    assertThat(object(p.get("usableHitTokens")).get("total"))
        .isEqualTo(object(p.get("hitTokens")).get("total"));
  }

  @Test
  void theHelpSaysThatSwaLayersKeepEveryPage() {
    CliRun simulate = run("simulate", "--help");
    CliRun replay = run("replay", "--help");

    assertThat(simulate.out().replaceAll("\\s+", " "))
        .contains("--layer-mix=MIX")
        .contains("SWA layers keep every page in this release")
        .contains("usable = matched")
        .contains("--snapshot-interval=K")
        .contains("--swa-cache=MODE")
        .contains("it does not shrink its pages");
    assertThat(replay.out().replaceAll("\\s+", " "))
        .contains("--layer-mix=MIX")
        .contains("SWA layers keep every page in this release")
        .contains("--snapshot-interval=LIST")
        .contains("--swa-cache=MODE");
  }
}
