package io.kvtier.simulator.replay;

import java.util.List;
import java.util.Objects;

/**
 * A whole replay: the trace, how it ran, and one result per configuration and baseline.
 *
 * @param workload the workload's spec
 * @param requests requests in the trace
 * @param promptTokens their prompt tokens
 * @param threads threads the configurations ran on
 * @param wallNanos wall-clock time of all configurations together (the trace's preparation not
 *     included)
 * @param results the sweep's configurations in order, then the baselines
 */
public record ReplaySummary(
    String workload,
    long requests,
    long promptTokens,
    int threads,
    long wallNanos,
    List<ReplayResult> results) {

  /** Copies the results. */
  public ReplaySummary {
    Objects.requireNonNull(workload, "workload");
    results = List.copyOf(results);
  }

  /**
   * The results of the sweep's configurations.
   *
   * @return those of kind {@link ReplayResult.Kind#SWEEP}, in order
   */
  public List<ReplayResult> sweep() {
    return results.stream().filter(r -> r.kind() == ReplayResult.Kind.SWEEP).toList();
  }

  /**
   * The baselines.
   *
   * @return the results that are not of kind {@link ReplayResult.Kind#SWEEP}
   */
  public List<ReplayResult> baselines() {
    return results.stream().filter(r -> r.kind() != ReplayResult.Kind.SWEEP).toList();
  }

  /**
   * Prompt tokens replayed per CPU second, over every configuration that ran the engine: the
   * speed per core, which other processes sharing the cores do not inflate.
   *
   * @return tokens per CPU second; 0 when no CPU time was measured
   */
  public double promptTokensPerCpuSecond() {
    long cpu = 0;
    long tokens = 0;
    for (ReplayResult r : results) {
      if (r.cpuNanos() > 0) {
        cpu += r.cpuNanos();
        tokens += r.promptTokens();
      }
    }
    return cpu == 0 ? 0 : tokens * 1e9 / cpu;
  }
}
