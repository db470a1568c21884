package io.kvtier.cli;

import io.kvtier.cli.report.TtftModel;
import io.kvtier.core.cache.CacheStats;
import io.kvtier.simulator.SimulationResult;
import java.util.Locale;

/**
 * The JSON document of {@code kvtier simulate --json FILE}: one object, every counter of the
 * {@link SimulationResult} and the TTFT estimate of the {@link TtftModel}, with the field names
 * the README lists. Written by hand because the result holds fractions ({@code wallSeconds}),
 * which the CLI's {@link JsonWriter} does not.
 */
final class SimulationJson {
  private final StringBuilder out = new StringBuilder();
  private boolean first = true;

  private SimulationJson() {}

  /** The JSON text of a result and its TTFT estimate, on one line, its warnings not under --strict. */
  static String of(SimulationResult r, TtftModel.Estimate ttft) {
    return of(r, ttft, null, r.passed());
  }

  /**
   * The JSON text of a result, its TTFT estimate and its warnings, on one line.
   *
   * @param r the result
   * @param ttft its TTFT estimate
   * @param warnings its warnings, null to derive none
   * @param passed the verdict: the checks, and under {@code --strict} the warnings too
   */
  static String of(
      SimulationResult r, TtftModel.Estimate ttft, RunWarnings warnings, boolean passed) {
    SimulationJson j = new SimulationJson();
    j.out.append('{');
    j.number("ranks", r.ranks());
    j.text("workload", r.workload());
    j.number("seed", r.seed());
    j.number("requests", r.requests());
    j.number("workloadRequests", r.requests() + r.unreadRequests());
    j.number("unreadRequests", r.unreadRequests());
    j.number("finished", r.finished());
    j.number("aborted", r.aborted());
    j.number("rejected", r.rejected());
    j.number("loadFailureAborts", r.loadFailureAborts());
    j.number("ticks", r.ticks());
    j.number("promptTokens", r.promptTokens());
    j.open("hitTokens");
    j.number("device", r.hitTokens().device());
    j.number("host", r.hitTokens().host());
    j.number("l3", r.hitTokens().l3());
    j.close();
    // computedTokens is prefill plus decode, as the engine counts it; the split adds up with
    // reusedTokens (and unreachedPromptTokens) to promptTokens.
    j.number("computedTokens", r.computedTokens());
    j.number("computedPromptTokens", r.prefillTokens());
    j.number("decodeTokens", r.decodeTokens());
    j.number("unreachedPromptTokens", r.unreachedPromptTokens());
    j.number("reusedTokens", r.hitTokens().total());
    j.open("collectives");
    j.number("calls", r.collectives().calls());
    j.fraction("perTick", r.collectivesPerTick());
    j.number("syncTicks", r.collectives().syncTicks());
    j.number("digestChecks", r.collectives().digestChecks());
    j.number("idleTicks", r.collectives().idleTicks());
    j.number("idleTickCalls", r.collectives().idleTickCalls());
    j.number("maxCallsPerTick", r.collectives().maxCallsPerTick());
    j.close();
    j.open("ttftMs");
    j.number("requests", ttft.requests());
    j.fraction("meanWithoutCache", ttft.meanWithoutCacheUs() / 1000);
    j.fraction("meanWithCache", ttft.meanWithCacheUs() / 1000);
    j.fraction("p50WithoutCache", ttft.withoutCachePercentileUs(50) / 1000);
    j.fraction("p50WithCache", ttft.withCachePercentileUs(50) / 1000);
    j.fraction("p99WithoutCache", ttft.withoutCachePercentileUs(99) / 1000);
    j.fraction("p99WithCache", ttft.withCachePercentileUs(99) / 1000);
    j.close();
    CacheStats c = r.cache();
    j.open("cache");
    j.number("backupsCommitted", c.backupsCommitted());
    j.number("backupsFailed", c.backupsFailed());
    j.number("loadsCommitted", c.loadsCommitted());
    j.number("loadsFailed", c.loadsFailed());
    j.number("preparedAttached", c.preparedAttached());
    j.number("preparedRolledBack", c.preparedRolledBack());
    j.number("deviceEvictions", c.deviceEvictions());
    j.number("hostEvictions", c.hostEvictions());
    j.close();
    // A run that stopped early never compared its final digests: null, not a misleading true.
    if (SimulationSummary.stoppedEarly(r)) {
      j.nullValue("replicaDigestsEqual");
    } else {
      j.bool("replicaDigestsEqual", r.replicaDigestsEqual());
    }
    j.bool("finalChecksRan", !SimulationSummary.stoppedEarly(r));
    j.number("desyncs", r.desyncs());
    j.number("leakedPages", r.leakedPages());
    j.number("kvVerifiedPages", r.kvVerifiedPages());
    j.number("kvMismatches", r.kvMismatches());
    j.bool("checksPassed", r.passed());
    j.bool("passed", passed);
    j.texts("warnings", warnings == null ? java.util.List.of() : warnings.messages());
    j.text("failure", r.failure().name());
    j.number("failureTick", r.failureTick());
    j.text("failureMessage", r.failureMessage());
    j.fraction("wallSeconds", r.wallSeconds());
    // A string: JSON readers lose the low bits of 64-bit numbers.
    j.text("replicaDigest", String.format(Locale.ROOT, "%016x", r.replicaDigest()));
    j.out.append('}');
    return j.out.toString();
  }

  private void name(String name) {
    if (!first) {
      out.append(',');
    }
    first = false;
    quote(name);
    out.append(':');
  }

  private void number(String name, long value) {
    name(name);
    out.append(value);
  }

  private void fraction(String name, double value) {
    name(name);
    // Finite by construction (a duration or a ratio); 6 decimals are more than a timer gives.
    out.append(String.format(Locale.ROOT, "%.6f", value));
  }

  private void bool(String name, boolean value) {
    name(name);
    out.append(value);
  }

  private void nullValue(String name) {
    name(name);
    out.append("null");
  }

  private void texts(String name, java.util.List<String> values) {
    name(name);
    out.append('[');
    for (int i = 0; i < values.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      quote(values.get(i));
    }
    out.append(']');
  }

  private void text(String name, String value) {
    name(name);
    quote(value);
  }

  private void open(String name) {
    name(name);
    out.append('{');
    first = true;
  }

  private void close() {
    out.append('}');
    first = false;
  }

  private void quote(String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
