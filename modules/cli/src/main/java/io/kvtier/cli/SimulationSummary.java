package io.kvtier.cli;

import io.kvtier.cli.report.TtftModel;
import io.kvtier.core.config.LayerMix;
import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationFailure;
import io.kvtier.simulator.SimulationResult;
import java.util.Locale;

/** The short text report of {@code kvtier simulate}. */
final class SimulationSummary {
  private SimulationSummary() {}

  /**
   * The report: the run, hit rates per tier, tokens computed vs reused, the estimated mean TTFT
   * with and without the cache (and its model), collectives per tick, checks.
   */
  static String of(SimulationConfig config, SimulationResult r) {
    return of(config, r, RunWarnings.of(config, r), false);
  }

  /**
   * Whether the run stopped before its end (a desync, a timeout, a failed rank, an invariant, an
   * error): the final digest comparison and the leak check after the drain did not run, and the
   * pages of the requests in flight are not leaks.
   *
   * @param r the result
   * @return true if the run did not reach the end of its drain
   */
  static boolean stoppedEarly(SimulationResult r) {
    return switch (r.failure()) {
      case NONE, LEAK, REPLICA_DIVERGENCE -> false;
      default -> true;
    };
  }

  /**
   * The report, with the run's warnings and, under {@code --strict}, their verdict.
   *
   * @param config the run
   * @param r its result
   * @param warnings its warnings
   * @param strict whether a warning fails the run
   * @return the text, one line per fact
   */
  static String of(
      SimulationConfig config, SimulationResult r, RunWarnings warnings, boolean strict) {
    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "kvtier simulate: %d ranks, ack delay %s, seed %d%s%n",
            r.ranks(),
            config.ackDelay().cliName(),
            r.seed(),
            config.threadRanks()
                ? ""
                : ", collective " + config.collective() + " (a process per" + " rank)"));
    s.append("workload  ").append(r.workload()).append('\n');
    for (String note : io.kvtier.cli.report.WorkloadNotes.summaryLines(r.workload())) {
      s.append("          ").append(note).append('\n');
    }
    if (hybrid(config)) {
      s.append("layers    ")
          .append(config.layerMix().map(LayerMix::toString).orElse("full attention"))
          .append(
              config.windowedSwa()
                  ? String.format(
                      Locale.ROOT,
                      ": --swa-cache windows: pages hold the full-attention KV, SWA windows%s go"
                          + " into snapshots of %d page slot%s every %d pages and at each"
                          + " request's last full page (--snapshot-interval)",
                      hasRecurrent(config) ? " and recurrent states" : "",
                      config.snapshotSlots(),
                      config.snapshotSlots() == 1 ? "" : "s",
                      config.snapshotIntervalPages())
                  : config.snapshots()
                      ? String.format(
                          Locale.ROOT,
                          ": recurrent-state snapshots of %d page slot%s every %d pages and at each"
                              + " request's last full page (--snapshot-interval)%s",
                          config.snapshotSlots(),
                          config.snapshotSlots() == 1 ? "" : "s",
                          config.snapshotIntervalPages(),
                          hasSwa(config) ? "; SWA layers keep every page (--swa-cache pages)" : "")
                      : ": no recurrent layer, no snapshots; SWA layers keep every page"
                          + (hasSwa(config) ? " (--swa-cache pages)" : ""))
          .append('\n');
    }
    s.append(
        String.format(
            Locale.ROOT,
            "requests  %d arrived, %d finished, %d aborted, %d aborted by a failed load-back,"
                + " %d rejected%n",
            r.requests(),
            r.finished(),
            r.aborted(),
            r.loadFailureAborts(),
            r.rejected()));
    if (r.loadFailureRecomputes() > 0 || r.hostChecksumMismatches() > 0) {
      s.append(
          String.format(
              Locale.ROOT,
              "recompute %d failed load-backs sent their requests back to the queue: %d tokens"
                  + " they were to bring back were recomputed instead; %d host blocks failed"
                  + " their checksum%n",
              r.loadFailureRecomputes(),
              r.loadFailureLostTokens(),
              r.hostChecksumMismatches()));
    }
    if (r.l3PagesMissed() > 0 || r.l3CorruptPages() > 0 || r.l3FlipsInjected() > 0) {
      s.append(
          String.format(
              Locale.ROOT,
              "l3 loss   %d pages reserved for prefetches were not fetched (%d prefetches timed"
                  + " out) and were computed instead; %d stored pages failed their store's"
                  + " checksum (%d bits flipped at rest)%n",
              r.l3PagesMissed(),
              r.l3PrefetchesTimedOut(),
              r.l3CorruptPages(),
              r.l3FlipsInjected()));
    }
    s.append(
        r.unreadRequests() == 0
            ? String.format(
                Locale.ROOT, "replayed  all %d requests of the workload%n", r.requests())
            : String.format(
                Locale.ROOT,
                "replayed  %d of %d requests of the workload (%d never arrived)%n",
                r.requests(),
                warnings.workloadRequests(),
                r.unreadRequests()));
    s.append(
        String.format(
            Locale.ROOT,
            "ticks     %d in %.2f s (%.0f ticks/s)%n",
            r.ticks(),
            r.wallSeconds(),
            r.wallSeconds() > 0 ? r.ticks() / r.wallSeconds() : 0));
    s.append('\n');
    if (hybrid(config)) {
      // Matched and usable side by side (HYBRID.md §8): a 0% usable hit rate must show.
      s.append(
          String.format(
              Locale.ROOT,
              "%-8s %12s %9s %12s %11s%n",
              "tier",
              "hit tokens",
              "hit rate",
              "usable",
              "usable rate"));
      SimulationResult.HitTokens m = r.hitTokens();
      SimulationResult.HitTokens u = r.usableHitTokens();
      row(s, "device", m.device(), u.device(), r.promptTokens());
      row(s, "host", m.host(), u.host(), r.promptTokens());
      row(s, "l3", m.l3(), u.l3(), r.promptTokens());
      row(s, "total", m.total(), u.total(), r.promptTokens());
      s.append(
          String.format(
              Locale.ROOT,
              "usable    %d of %d matched hit tokens (%.1f%%) %s%n",
              u.total(),
              m.total(),
              100 * r.usableOfMatched(),
              config.windowedSwa()
                  ? "resumed from a snapshot (SWA windows"
                      + (hasRecurrent(config) ? " and recurrent states" : "")
                      + "); the rest of each match was recomputed"
                  : config.snapshots()
                      ? "resumed from a recurrent-state snapshot; the rest of each match was"
                          + " recomputed"
                      : "(no recurrent layer, and SWA layers keep every page: all usable)"));
    } else {
      s.append(String.format(Locale.ROOT, "%-8s %12s %9s%n", "tier", "hit tokens", "hit rate"));
      row(s, "device", r.hitTokens().device(), r.promptTokens());
      row(s, "host", r.hitTokens().host(), r.promptTokens());
      row(s, "l3", r.hitTokens().l3(), r.promptTokens());
      row(s, "total", r.hitTokens().total(), r.promptTokens());
    }
    s.append('\n');
    // Prompt = reused + computed (+ what aborted requests never reached); decode tokens apart.
    s.append(
        String.format(
            Locale.ROOT,
            "tokens    %d prompt = %d reused + %d computed%s; %d decode tokens computed%n",
            r.promptTokens(),
            r.usableHitTokens().total(),
            r.prefillTokens(),
            r.unreachedPromptTokens() == 0
                ? ""
                : " + "
                    + r.unreachedPromptTokens()
                    + " never reached (aborted, or the run stopped, mid-prefill)",
            r.decodeTokens()));
    TtftModel.Estimate ttft = TtftModel.DEFAULT.estimate(r, config.pageSize());
    s.append(
        String.format(
            Locale.ROOT,
            "TTFT      mean %.2f ms without cache, %.2f ms with cache (%.2fx), %d requests%n"
                + "          p50 %.2f / %.2f ms, p99 %.2f / %.2f ms without / with cache%n",
            ttft.meanWithoutCacheUs() / 1000,
            ttft.meanWithCacheUs() / 1000,
            ttft.speedup(),
            ttft.requests(),
            ttft.withoutCachePercentileUs(50) / 1000,
            ttft.withCachePercentileUs(50) / 1000,
            ttft.withoutCachePercentileUs(99) / 1000,
            ttft.withCachePercentileUs(99) / 1000));
    s.append("TTFT model: ").append(TtftModel.DEFAULT.describe()).append('\n');
    SimulationResult.CollectiveCounts c = r.collectives();
    s.append(
        String.format(
            Locale.ROOT,
            "collectives  %.2f per tick (%d calls: recv in every tick that ran, sync in %d"
                + " ticks, %d digest checks); idle ticks %d (%d skipped: no rank ran them) with %d"
                + " calls besides recv; at most %d per tick%n",
            r.collectivesPerTick(),
            c.calls(),
            c.syncTicks(),
            c.digestChecks(),
            c.idleTicks(),
            c.skippedTicks(),
            c.idleTickCalls(),
            c.maxCallsPerTick()));
    if (stoppedEarly(r)) {
      // The group stopped mid-run: the final digest comparison and the leak check after the
      // drain never ran, and the pages the stop left in use are not leaks.
      s.append(
          String.format(
              Locale.ROOT,
              "checks    stopped at tick %d %s: digests not compared at the end, leaks not"
                  + " counted; kv verified pages %d, kv mismatches %d%s%n",
              r.failureTick(),
              r.failure() == SimulationFailure.RANK_FAILED
                  ? "when a rank failed"
                  : "by " + r.failure().name().toLowerCase(Locale.ROOT).replace('_', ' '),
              r.kvVerifiedPages(),
              r.kvMismatches(),
              snapshotChecks(config, r)));
      invariants(s, config, "");
      s.append(
          String.format(
              Locale.ROOT,
              "digest    %016x (rank 0's replica where it stopped)%n",
              r.replicaDigest()));
    } else {
      s.append(
          String.format(
              Locale.ROOT,
              "checks    digests equal %s, desyncs %d, leaked pages %d, kv verified pages %d,"
                  + " kv mismatches %d%s%n",
              r.replicaDigestsEqual() ? "yes" : "NO",
              r.desyncs(),
              r.leakedPages(),
              r.kvVerifiedPages(),
              r.kvMismatches(),
              snapshotChecks(config, r)));
      invariants(s, config, " and after the drain");
      s.append(
          String.format(
              Locale.ROOT, "digest    %016x (rank 0's replica at the end)%n", r.replicaDigest()));
    }
    for (String warning : warnings.messages()) {
      s.append("warning   ").append(warning).append('\n');
    }
    if (!r.passed()) {
      s.append("result    FAIL: ").append(failure(r)).append('\n');
    } else if (warnings.none()) {
      s.append("result    PASS\n");
    } else if (strict) {
      s.append("result    FAIL: --strict, and the run printed a warning above\n");
    } else {
      s.append("result    PASS, with the warnings above (--strict makes a warning a failure)\n");
    }
    return s.toString();
  }

  /** How often the invariants were checked: the bound within which a broken rule is caught. */
  private static void invariants(StringBuilder s, SimulationConfig config, String end) {
    s.append(
        config.fullCheckInterval() == 1
            ? "          invariants checked in full after every tick" + end + "\n"
            : String.format(
                Locale.ROOT,
                "          invariants checked in full every %d ticks%s, what changed after every"
                    + " tick (--full-check-interval)%n",
                config.fullCheckInterval(),
                end));
  }

  /**
   * What failed: the failure's first line, or, for a run that completed but found wrong bytes,
   * which check found them.
   */
  static String failure(SimulationResult r) {
    if (r.failure() != SimulationFailure.NONE || !r.failureMessage().isEmpty()) {
      return r.failureMessage().lines().findFirst().orElse(r.failure().name());
    }
    if (r.snapshotMismatches() > 0) {
      return r.snapshotMismatches()
          + " of "
          + r.snapshotsVerified()
          + " resumes from a recurrent-state snapshot found a wrong or missing state";
    }
    if (r.kvMismatches() > 0) {
      return r.kvMismatches()
          + " of "
          + r.kvVerifiedPages()
          + " pages checked after a load-back held the wrong KV";
    }
    return r.failure().name();
  }

  /** Whether the mix has an SWA layer. */
  private static boolean hasSwa(SimulationConfig config) {
    return config.layerMix().map(LayerMix::hasSwa).orElse(false);
  }

  /** Whether the mix has a recurrent layer. */
  private static boolean hasRecurrent(SimulationConfig config) {
    return config.layerMix().map(LayerMix::hasRecurrent).orElse(false);
  }

  /** Whether the run has a layer mix: the summary then prints usable beside matched hits. */
  private static boolean hybrid(SimulationConfig config) {
    return config.snapshots() || config.layerMix().isPresent();
  }

  /** The snapshot checks of the checks line: resumes checked and wrong, with snapshots only. */
  private static String snapshotChecks(SimulationConfig config, SimulationResult r) {
    return config.snapshots() || r.snapshotsVerified() > 0 || r.snapshotMismatches() > 0
        ? String.format(
            Locale.ROOT,
            ", snapshot resumes verified %d, snapshot mismatches %d",
            r.snapshotsVerified(),
            r.snapshotMismatches())
        : "";
  }

  private static void row(StringBuilder s, String tier, long tokens, long usable, long prompt) {
    s.append(
        String.format(
            Locale.ROOT,
            "%-8s %12d %8.1f%% %12d %10.1f%%%n",
            tier,
            tokens,
            prompt == 0 ? 0.0 : 100.0 * tokens / prompt,
            usable,
            prompt == 0 ? 0.0 : 100.0 * usable / prompt));
  }

  private static void row(StringBuilder s, String tier, long tokens, long prompt) {
    s.append(
        String.format(
            Locale.ROOT,
            "%-8s %12d %8.1f%%%n",
            tier,
            tokens,
            prompt == 0 ? 0.0 : 100.0 * tokens / prompt));
  }
}
