package io.kvtier.cli;

import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * What makes a run that passed its checks a poor measurement: most of its requests rejected or
 * aborted, or part of the workload never replayed. {@code kvtier simulate} prints each as a
 * {@code warning} line and writes them to the JSON; with {@code --strict} any of them fails the
 * run (exit status 1).
 *
 * @param workloadRequests the requests in the workload, replayed or not
 * @param messages one sentence per warning, in the user's option names, saying what to change
 */
record RunWarnings(long workloadRequests, List<String> messages) {

  /** Validates the fields. */
  RunWarnings {
    Objects.requireNonNull(messages, "messages");
    messages = List.copyOf(messages);
  }

  /**
   * The warnings of a run.
   *
   * @param config the run
   * @param r its result
   * @return the warnings, none for a run that replayed its workload and finished most of it
   */
  static RunWarnings of(SimulationConfig config, SimulationResult r) {
    long total = r.requests() + r.unreadRequests();
    List<String> messages = new ArrayList<>();
    if (r.unreadRequests() > 0) {
      String cause;
      if (r.failure() != io.kvtier.simulator.SimulationFailure.NONE) {
        cause = "the run stopped at its failure";
      } else if (config.requests() > 0 && r.requests() >= config.requests()) {
        cause = "--requests " + config.requests() + " took no more (give --requests 0 for all)";
      } else {
        cause =
            "the input ended at --ticks "
                + config.ticks()
                + " (give more --ticks to replay them all, or --requests N to take fewer)";
      }
      messages.add(
          String.format(
              Locale.ROOT,
              "%d of the workload's %d requests were never replayed: %s",
              r.unreadRequests(),
              total,
              cause));
    }
    long dropped = r.rejected() + r.aborted() + r.loadFailureAborts();
    if (r.requests() > 0 && 2 * dropped > r.requests()) {
      List<String> why = new ArrayList<>();
      if (r.rejected() > 0) {
        why.add(
            r.rejected()
                + " rejected: a request whose KV can never fit --device-pages "
                + config.devicePages()
                + " (or with a token outside the vocabulary) is rejected, so give more"
                + " --device-pages or --page-size, or shorter prompts");
      }
      if (r.aborted() > 0) {
        why.add(
            r.aborted()
                + " aborted by --abort-probability "
                + config.abortProbability()
                + " per tick");
      }
      if (r.loadFailureAborts() > 0) {
        why.add(
            r.loadFailureAborts()
                + " aborted by a failed load-back (--failure-probability "
                + config.failureProbability()
                + ")");
      }
      messages.add(
          String.format(
              Locale.ROOT,
              "%d of %d requests did not finish: %s",
              dropped,
              r.requests(),
              String.join("; ", why)));
    }
    if (r.requests() == 0 && total == 0) {
      messages.add("the workload has no requests: nothing was measured");
    }
    return new RunWarnings(total, messages);
  }

  /**
   * Whether there is any warning.
   *
   * @return true if none
   */
  boolean none() {
    return messages.isEmpty();
  }
}
