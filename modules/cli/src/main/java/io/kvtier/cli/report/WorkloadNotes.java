package io.kvtier.cli.report;

import io.kvtier.simulator.SimulationConfig;
import java.util.List;

/**
 * What the default workload is, in words, and which workload to run instead to see the tiers at
 * work: the first run's "with cache 1.12x" means little until one knows that its small chats
 * mostly stay on the device. The summary and the report page print these lines for the default
 * workload only.
 */
public final class WorkloadNotes {
  private WorkloadNotes() {}

  /**
   * The notes of a run's workload, for the report page.
   *
   * @param spec the workload as run, every parameter spelled out
   * @return two sentences for the default workload, none for another
   */
  public static List<String> lines(String spec) {
    if (!isDefault(spec)) {
      return List.of();
    }
    return List.of(
        "This is the default workload: 48 multi-turn chats of 4 turns (a 96-token first prompt,"
            + " then 16-token answers and 32-token questions). Their KV mostly stays on the"
            + " device, so the cache reuses about half of the prompt tokens and, with prompts"
            + " this short, queueing dominates the estimated TTFT.",
        "For a workload where the tiers matter, run kvtier simulate --workload doc-qa: 6"
            + " documents of 1,024 tokens, each asked 4 times, do not fit the device pool"
            + " together, so the host tier serves about a third of the prompt tokens.");
  }

  /**
   * The same notes, short, for the text summary (indented under its {@code workload} line).
   *
   * @param spec the workload as run
   * @return two lines for the default workload, none for another
   */
  public static List<String> summaryLines(String spec) {
    if (!isDefault(spec)) {
      return List.of();
    }
    return List.of(
        "(the default: 48 short chats whose KV mostly stays on the device)",
        "(where the tiers matter: --workload doc-qa, documents that do not fit the device)");
  }

  private static boolean isDefault(String spec) {
    return spec.startsWith(SimulationConfig.DEFAULT_WORKLOAD + ",");
  }
}
