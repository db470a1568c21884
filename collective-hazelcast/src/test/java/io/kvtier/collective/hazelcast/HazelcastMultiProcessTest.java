package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Ranks as separate processes: 3 JVMs of {@link HazelcastRankProcessMain}, each an embedded
 * member on loopback, play the {@link CollectiveWorkload}. They must reach equal digests, equal
 * to what the {@code local} collective gives for the seed; and when one of them is killed
 * mid-run, the two others must fail with an exception that names it, not hang.
 */
class HazelcastMultiProcessTest {

  private static final int RANKS = 3;
  private static final Duration WATCHDOG = Duration.ofSeconds(20);

  /** Bound on a whole run: a rank process still alive then hangs. */
  private static final long HANG_GUARD_SECONDS = 150;

  private final List<RankProcess> processes = new ArrayList<>();

  @AfterEach
  void killLeftovers() {
    for (RankProcess p : processes) {
      p.process.destroyForcibly();
    }
  }

  /**
   * One run of 3 processes checks both, since starting 3 JVMs with a member each takes tens of
   * seconds on a busy machine: first the digests, then the kill.
   *
   * @throws Exception on failure
   */
  @Test
  @Timeout(240)
  void rankProcessesAgreeWithTheLocalCollectiveThenFailNamingAKilledOne() throws Exception {
    long seed = 0x5EED_2026L;
    int rounds = 120;
    startRanks(seed, rounds);
    String expected = "DIGEST " + Long.toHexString(localDigest(seed, rounds));
    for (RankProcess p : processes) {
      assertThat(p.await(expected)).as("rank %d's digest (output: %s)", p.rank, p.lines).isTrue();
    }

    RankProcess victim = processes.get(RANKS - 1);
    assertThat(victim.await("MORE 100")).as("the victim went on: %s", victim.lines).isTrue();
    victim.process.destroyForcibly();
    long killed = System.nanoTime();
    for (RankProcess p : processes.subList(0, RANKS - 1)) {
      assertThat(p.process.waitFor(HANG_GUARD_SECONDS, TimeUnit.SECONDS))
          .as("rank %d ended after rank %d was killed (output: %s)", p.rank, victim.rank, p.lines)
          .isTrue();
      String failure =
          p.lines.stream()
              .filter(l -> l.startsWith("FAILED "))
              .findFirst()
              .orElseThrow(
                  () -> new AssertionError("rank " + p.rank + " did not fail: " + p.lines));
      assertThat(failure).contains("io.kvtier.spi.Collective").contains("rank " + victim.rank);
      assertThat(p.process.exitValue()).isEqualTo(3);
      System.out.printf(
          "rank %d failed %.1f s after rank %d was killed (watchdog %s): %s%n",
          p.rank, (p.failedAt.get() - killed) / 1e9, victim.rank, WATCHDOG, failure);
    }
  }

  private void startRanks(long seed, int rounds) throws IOException {
    HazelcastConfig base = HazelcastTestCluster.testConfig(RANKS, Map.of());
    List<String> members = new ArrayList<>();
    for (int r = 0; r < RANKS; r++) {
      members.add("127.0.0.1:" + (base.port() + r));
    }
    for (int r = 0; r < RANKS; r++) {
      HazelcastConfig mine =
          base.with(HazelcastConfig.PORT, Integer.toString(base.port() + r))
              .with(HazelcastConfig.PORT_COUNT, "1")
              .with(HazelcastConfig.MEMBERS, String.join(",", members))
              .with(HazelcastConfig.JOIN_TIMEOUT, "120s");
      List<String> command =
          new ArrayList<>(
              List.of(
                  javaBinary(),
                  "-Xmx256m",
                  "-XX:+UseSerialGC",
                  "-XX:TieredStopAtLevel=1",
                  "-cp",
                  classPath(),
                  HazelcastRankProcessMain.class.getName(),
                  Integer.toString(r),
                  Integer.toString(RANKS),
                  Long.toString(seed),
                  Integer.toString(rounds),
                  Long.toString(WATCHDOG.toMillis()),
                  "go-on"));
      mine.toProperties().forEach((k, v) -> command.add(k + "=" + v));
      Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
      processes.add(new RankProcess(r, process));
    }
  }

  /** The same workload on the {@code local} collective, ranks as threads. */
  private static long localDigest(long seed, int rounds) throws Exception {
    CollectiveProvider local = Providers.named(CollectiveProvider.class, "local");
    List<CompletableFuture<Long>> ranks = new ArrayList<>();
    for (int r = 0; r < RANKS; r++) {
      int rank = r;
      ranks.add(
          HazelcastTestCluster.inThread(
              () -> {
                try (Collective c =
                    local.join(
                        CollectiveSpec.of("local-reference", RANKS, rank, WATCHDOG),
                        BackendContext.defaults().withRank(rank))) {
                  return CollectiveWorkload.run(c, seed, rounds, round -> {});
                }
              }));
    }
    long digest = ranks.get(0).get(60, TimeUnit.SECONDS);
    for (CompletableFuture<Long> rank : ranks) {
      assertThat(rank.get(60, TimeUnit.SECONDS)).isEqualTo(digest);
    }
    return digest;
  }

  private static String javaBinary() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** Everything the test runs with, on the class path: the children need no module setup. */
  private static String classPath() {
    List<String> entries = new ArrayList<>();
    entries.add(Path.of("target", "test-classes").toAbsolutePath().toString());
    for (String property : List.of("jdk.module.path", "java.class.path")) {
      String value = System.getProperty(property, "");
      for (String entry : value.split(File.pathSeparator)) {
        if (!entry.isBlank() && !entries.contains(entry)) {
          entries.add(entry);
        }
      }
    }
    return String.join(File.pathSeparator, entries);
  }

  /** A rank's process and the lines it printed, read by a thread of its own. */
  private static final class RankProcess {
    final int rank;
    final Process process;
    final List<String> lines = new CopyOnWriteArrayList<>();
    final AtomicLong failedAt = new AtomicLong();

    RankProcess(int rank, Process process) {
      this.rank = rank;
      this.process = process;
      Thread.ofPlatform().daemon().name("rank-" + rank + "-output").start(this::read);
    }

    private void read() {
      try (BufferedReader in =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          if (line.startsWith("FAILED ")) {
            failedAt.compareAndSet(0, System.nanoTime());
          }
          if (line.startsWith("MORE ")
              || line.startsWith("DIGEST ")
              || line.startsWith("JOINED ")
              || line.startsWith("FAILED ")
              || line.contains("Exception")) {
            lines.add(line);
          }
        }
      } catch (IOException e) {
        lines.add("output unreadable: " + e);
      }
    }

    /** Waits until the process printed {@code line}; false if it ended or the guard passed. */
    boolean await(String line) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
      while (System.nanoTime() < deadline) {
        if (lines.contains(line)) {
          return true;
        }
        if (!process.isAlive()) {
          return lines.contains(line);
        }
        Thread.sleep(50);
      }
      return false;
    }
  }
}
