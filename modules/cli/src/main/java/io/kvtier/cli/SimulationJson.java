package io.kvtier.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import io.kvtier.cli.report.TtftModel;
import io.kvtier.core.cache.CacheCounter;
import io.kvtier.core.cache.CacheStats;
import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationResult;
import java.io.IOException;
import java.util.List;
import java.util.Locale;

/**
 * The JSON document of {@code kvtier simulate --json FILE}: one object on one line, every counter
 * of the {@link SimulationResult} and the TTFT estimate of the {@link TtftModel}, with the field
 * names and order the README lists; fractions with six decimals ({@link CliJson#fraction}).
 */
final class SimulationJson {

  private SimulationJson() {}

  /**
   * The JSON text of a result and its TTFT estimate, on one line, its warnings not under --strict.
   *
   * @param r the result
   * @param ttft its TTFT estimate
   * @param config the run's config (its layer mix, SWA cache mode and snapshots)
   */
  static String of(SimulationResult r, TtftModel.Estimate ttft, SimulationConfig config) {
    return of(r, ttft, null, r.passed(), config);
  }

  /**
   * The JSON text of a result, its TTFT estimate and its warnings, on one line.
   *
   * @param r the result
   * @param ttft its TTFT estimate
   * @param warnings its warnings, null to derive none
   * @param passed the verdict: the checks, and under {@code --strict} the warnings too
   * @param config the run's config (its layer mix, SWA cache mode and snapshots)
   */
  static String of(
      SimulationResult r,
      TtftModel.Estimate ttft,
      RunWarnings warnings,
      boolean passed,
      SimulationConfig config) {
    return of(r, ttft, warnings, passed, config, null);
  }

  /**
   * The JSON text of a result with the byte capacity {@code --kv-layout} gave, as {@code
   * "capacity"} at its end: {@code kvLayout}, {@code parallel}, {@code kvBytesPerToken} (the
   * model's), {@code rankKvBytesPerToken} (one rank's share), {@code devicePages} (per rank) and
   * {@code deviceBytesPerRank} (those pages' bytes on one rank).
   *
   * @param r the result
   * @param ttft its TTFT estimate
   * @param warnings its warnings, null to derive none
   * @param passed the verdict
   * @param config the run's config
   * @param capacity the run's byte capacity, null without {@code --kv-layout}
   */
  static String of(
      SimulationResult r,
      TtftModel.Estimate ttft,
      RunWarnings warnings,
      boolean passed,
      SimulationConfig config,
      SimulateCommand.ByteCapacity capacity) {
    return CliJson.write(j -> write(j, r, ttft, warnings, passed, config, capacity));
  }

  private static void write(
      JsonGenerator j,
      SimulationResult r,
      TtftModel.Estimate ttft,
      RunWarnings warnings,
      boolean passed,
      SimulationConfig config,
      SimulateCommand.ByteCapacity capacity)
      throws IOException {
    j.writeStartObject();
    j.writeNumberField("ranks", r.ranks());
    j.writeStringField("workload", r.workload());
    j.writeNumberField("seed", r.seed());
    j.writeNumberField("requests", r.requests());
    j.writeNumberField("workloadRequests", r.requests() + r.unreadRequests());
    j.writeNumberField("unreadRequests", r.unreadRequests());
    j.writeNumberField("finished", r.finished());
    j.writeNumberField("aborted", r.aborted());
    j.writeNumberField("rejected", r.rejected());
    j.writeNumberField("loadFailureAborts", r.loadFailureAborts());
    j.writeNumberField("loadFailureRecomputes", r.loadFailureRecomputes());
    j.writeNumberField("loadFailureLostTokens", r.loadFailureLostTokens());
    j.writeNumberField("ticks", r.ticks());
    j.writeNumberField("promptTokens", r.promptTokens());
    j.writeObjectFieldStart("hitTokens");
    j.writeNumberField("device", r.hitTokens().device());
    j.writeNumberField("host", r.hitTokens().host());
    j.writeNumberField("l3", r.hitTokens().l3());
    j.writeEndObject();
    // computedTokens is prefill plus decode, as the engine counts it; the split adds up with
    // reusedTokens (and unreachedPromptTokens) to promptTokens. Reused are the usable hit tokens
    // (the matched ones without a recurrent layer): an unusable matched token is computed.
    j.writeNumberField("computedTokens", r.computedTokens());
    j.writeNumberField("computedPromptTokens", r.prefillTokens());
    j.writeNumberField("decodeTokens", r.decodeTokens());
    j.writeNumberField("unreachedPromptTokens", r.unreachedPromptTokens());
    j.writeNumberField("reusedTokens", r.usableHitTokens().total());
    // The part of the match that requests resumed from (HYBRID.md §5): hitTokens without a
    // recurrent layer; with one, up to each match's deepest snapshot. A 0% usable rate shows here.
    j.writeObjectFieldStart("usableHitTokens");
    j.writeNumberField("device", r.usableHitTokens().device());
    j.writeNumberField("host", r.usableHitTokens().host());
    j.writeNumberField("l3", r.usableHitTokens().l3());
    j.writeEndObject();
    j.writeNumberField("usableTokens", r.usableHitTokens().total());
    j.writeNumberField("usableOfMatched", CliJson.fraction(r.usableOfMatched()));
    // What the cache did for the mix (HYBRID.md §8): "" for all full attention; swaCache is
    // pages unless --swa-cache windows; the slots of one snapshot and its interval, 0 without.
    j.writeStringField("layerMix", config.layerMix().map(Object::toString).orElse(""));
    j.writeStringField(
        "swaCache", config.windowedSwa() ? HybridOptions.WINDOWS : HybridOptions.PAGES);
    j.writeNumberField("snapshotSlots", config.snapshotSlots());
    j.writeNumberField(
        "snapshotIntervalPages", config.snapshots() ? config.snapshotIntervalPages() : 0);
    j.writeObjectFieldStart("collectives");
    j.writeNumberField("calls", r.collectives().calls());
    j.writeNumberField("perTick", CliJson.fraction(r.collectivesPerTick()));
    j.writeNumberField("syncTicks", r.collectives().syncTicks());
    j.writeNumberField("digestChecks", r.collectives().digestChecks());
    j.writeNumberField("idleTicks", r.collectives().idleTicks());
    j.writeNumberField("skippedTicks", r.collectives().skippedTicks());
    j.writeNumberField("idleTickCalls", r.collectives().idleTickCalls());
    j.writeNumberField("maxCallsPerTick", r.collectives().maxCallsPerTick());
    j.writeEndObject();
    j.writeObjectFieldStart("ttftMs");
    j.writeNumberField("requests", ttft.requests());
    j.writeNumberField("meanWithoutCache", CliJson.fraction(ttft.meanWithoutCacheUs() / 1000));
    j.writeNumberField("meanWithCache", CliJson.fraction(ttft.meanWithCacheUs() / 1000));
    j.writeNumberField(
        "p50WithoutCache", CliJson.fraction(ttft.withoutCachePercentileUs(50) / 1000));
    j.writeNumberField("p50WithCache", CliJson.fraction(ttft.withCachePercentileUs(50) / 1000));
    j.writeNumberField(
        "p99WithoutCache", CliJson.fraction(ttft.withoutCachePercentileUs(99) / 1000));
    j.writeNumberField("p99WithCache", CliJson.fraction(ttft.withCachePercentileUs(99) / 1000));
    j.writeEndObject();
    CacheStats c = r.cache();
    j.writeObjectFieldStart("cache");
    for (CacheCounter counter : CacheCounter.reported()) {
      j.writeNumberField(counter.key(), c.get(counter));
    }
    j.writeEndObject();
    // A run that stopped early never compared its final digests: null, not a misleading true.
    if (SimulationSummary.stoppedEarly(r)) {
      j.writeNullField("replicaDigestsEqual");
    } else {
      j.writeBooleanField("replicaDigestsEqual", r.replicaDigestsEqual());
    }
    j.writeBooleanField("finalChecksRan", !SimulationSummary.stoppedEarly(r));
    j.writeNumberField("desyncs", r.desyncs());
    j.writeNumberField("leakedPages", r.leakedPages());
    j.writeNumberField("kvVerifiedPages", r.kvVerifiedPages());
    j.writeNumberField("kvMismatches", r.kvMismatches());
    j.writeNumberField("hostChecksumMismatches", r.hostChecksumMismatches());
    // Why L3 gave less than it promised: pages reserved and not fetched in time (any cause),
    // timeouts, and pages the stores found damaged by their checksum (flips injected at rest).
    j.writeObjectFieldStart("l3");
    j.writeNumberField("pagesMissed", r.l3PagesMissed());
    j.writeNumberField("prefetchesTimedOut", r.l3PrefetchesTimedOut());
    j.writeNumberField("corruptPages", r.l3CorruptPages());
    j.writeNumberField("flipsInjected", r.l3FlipsInjected());
    j.writeEndObject();
    j.writeNumberField("snapshotsVerified", r.snapshotsVerified());
    j.writeNumberField("snapshotMismatches", r.snapshotMismatches());
    j.writeBooleanField("checksPassed", r.passed());
    j.writeBooleanField("passed", passed);
    j.writeArrayFieldStart("warnings");
    for (String warning : warnings == null ? List.<String>of() : warnings.messages()) {
      j.writeString(warning);
    }
    j.writeEndArray();
    j.writeStringField("failure", r.failure().name());
    j.writeNumberField("failureTick", r.failureTick());
    j.writeStringField("failureMessage", r.failureMessage());
    j.writeNumberField("wallSeconds", CliJson.fraction(r.wallSeconds()));
    // A string: JSON readers lose the low bits of 64-bit numbers.
    j.writeStringField("replicaDigest", String.format(Locale.ROOT, "%016x", r.replicaDigest()));
    if (capacity != null) {
      j.writeObjectFieldStart("capacity");
      j.writeStringField("kvLayout", capacity.kvLayout());
      j.writeStringField("parallel", capacity.share().parallelism().configName());
      j.writeNumberField("kvBytesPerToken", capacity.share().modelBytesPerToken());
      j.writeNumberField("rankKvBytesPerToken", capacity.share().bytesPerToken());
      j.writeNumberField("devicePages", capacity.devicePages());
      j.writeNumberField("deviceBytesPerRank", capacity.deviceBytesPerRank());
      j.writeEndObject();
    }
    j.writeEndObject();
  }
}
