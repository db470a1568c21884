package io.kvtier.simulator.replay;

import io.kvtier.simulator.workload.BlockHashTrace;
import io.kvtier.simulator.workload.Request;
import io.kvtier.simulator.workload.Workload;
import java.util.Arrays;
import java.util.Objects;

/**
 * The prompts of a workload, expanded once and shared, read-only, by every configuration of a
 * replay: the expansion (a block-hash trace draws 512 pseudo-tokens per id) costs about as much
 * as one configuration's replay, so it is not repeated per configuration. Arrival times and output
 * budgets are dropped: the replay runs requests one after another in arrival order.
 */
public final class ReplayTrace {
  private final String spec;
  private final int[][] prompts;
  private final long promptTokens;
  private final int longestPrompt;
  private final boolean cut;

  private ReplayTrace(String spec, int[][] prompts, boolean cut) {
    this.spec = spec;
    this.cut = cut;
    this.prompts = prompts;
    long tokens = 0;
    int longest = 0;
    for (int[] p : prompts) {
      tokens += p.length;
      longest = Math.max(longest, p.length);
    }
    this.promptTokens = tokens;
    this.longestPrompt = longest;
  }

  /**
   * The first {@code limit} requests of a workload.
   *
   * @param workload the workload
   * @param limit the most requests to keep, at least 0; {@code Integer.MAX_VALUE} for all
   * @return the trace
   */
  public static ReplayTrace of(Workload workload, int limit) {
    Objects.requireNonNull(workload, "workload");
    if (limit < 0) {
      throw new IllegalArgumentException("limit=" + limit + " must be >= 0");
    }
    int[][] prompts;
    boolean cut;
    if (workload instanceof BlockHashTrace trace) {
      // Straight from the ids: Request would copy each prompt twice on the way.
      prompts = new int[Math.min(limit, trace.size())][];
      cut = prompts.length < trace.size();
      for (int i = 0; i < prompts.length; i++) {
        prompts[i] = trace.prompt(i);
      }
    } else {
      // One more than the limit, to tell whether the workload had more.
      prompts = workload.requests().limit(limit + 1L).map(Request::prompt).toArray(int[][]::new);
      cut = prompts.length > limit;
      if (cut) {
        prompts = Arrays.copyOf(prompts, limit);
      }
    }
    return new ReplayTrace(workload.spec(), prompts, cut);
  }

  /**
   * A trace of the given prompts, for tests.
   *
   * @param spec the name to report
   * @param prompts the prompts in order; copied
   * @return the trace
   */
  public static ReplayTrace ofPrompts(String spec, int[]... prompts) {
    Objects.requireNonNull(spec, "spec");
    int[][] copy = new int[prompts.length][];
    for (int i = 0; i < prompts.length; i++) {
      if (prompts[i].length == 0) {
        throw new IllegalArgumentException("prompt " + i + " is empty");
      }
      copy[i] = prompts[i].clone();
    }
    return new ReplayTrace(spec, copy, false);
  }

  /**
   * The workload's spec.
   *
   * @return the spec
   */
  public String spec() {
    return spec;
  }

  /**
   * The number of requests.
   *
   * @return the count
   */
  public int size() {
    return prompts.length;
  }

  /**
   * All prompt tokens.
   *
   * @return the sum of the prompt lengths
   */
  public long promptTokens() {
    return promptTokens;
  }

  /**
   * The longest prompt.
   *
   * @return its length in tokens, 0 for an empty trace
   */
  public int longestPrompt() {
    return longestPrompt;
  }

  /**
   * Whether the workload had more requests than the limit kept.
   *
   * @return true if requests were left out
   */
  public boolean cut() {
    return cut;
  }

  /** One prompt, shared: the caller must not change it. */
  int[] prompt(int i) {
    return prompts[i];
  }

  /**
   * A copy of one prompt.
   *
   * @param i the request, in {@code [0, size())}
   * @return its tokens
   */
  public int[] promptCopy(int i) {
    return Arrays.copyOf(prompts[Objects.checkIndex(i, prompts.length)], prompts[i].length);
  }
}
