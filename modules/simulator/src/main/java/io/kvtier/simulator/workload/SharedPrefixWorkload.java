package io.kvtier.simulator.workload;

import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Groups of requests that share a system prompt: each request picks a group with Zipf(alpha)
 * popularity (group 0 the most popular) and asks a fresh question after the group's system
 * prompt. Spec name {@code shared-prefix}, keys {@code groups, alpha, system, question, requests,
 * output, rate, seed, vocab}.
 *
 * @param groups number of groups (system prompts), at least 1
 * @param alpha Zipf exponent of group popularity, at least 0 (0: uniform)
 * @param systemTokens system prompt length, at least 0
 * @param questionTokens question length, at least 0; system plus question at least 1
 * @param requestCount number of requests, at least 0
 * @param outputTokens max output tokens of each request, at least 0
 * @param rate Poisson arrival rate in requests per second, at least 0 (0: all arrive at time 0)
 * @param seed the generator seed
 * @param vocab vocabulary size, at least 1
 */
public record SharedPrefixWorkload(
    int groups,
    double alpha,
    int systemTokens,
    int questionTokens,
    int requestCount,
    int outputTokens,
    double rate,
    long seed,
    int vocab)
    implements Workload {

  /** The spec name. */
  public static final String NAME = "shared-prefix";

  static final List<String> KEYS =
      List.of(
          "groups", "alpha", "system", "question", "requests", "output", "rate", "seed", "vocab");

  /** The defaults of WORKLOADS.md: 64 groups, alpha 1.0, 2048 + 128 tokens, 1024 requests. */
  public static final SharedPrefixWorkload DEFAULTS =
      new SharedPrefixWorkload(64, 1.0, 2048, 128, 1024, 128, 0, FixedTraces.BASE_SEED, 32000);

  /** Validates the fields. */
  public SharedPrefixWorkload {
    Check.atLeast("groups", groups, 1);
    Check.finiteAtLeast("alpha", alpha, 0);
    Check.atLeast("system", systemTokens, 0);
    Check.atLeast("question", questionTokens, 0);
    Check.atLeast("requests", requestCount, 0);
    Check.atLeast("output", outputTokens, 0);
    Check.finiteAtLeast("rate", rate, 0);
    Check.atLeast("vocab", vocab, 1);
    long promptTokens = (long) systemTokens + questionTokens;
    if (promptTokens < 1 || promptTokens > Check.MAX_PROMPT) {
      throw new IllegalArgumentException(
          "system=%d + question=%d must be between 1 and %d tokens"
              .formatted(systemTokens, questionTokens, Check.MAX_PROMPT));
    }
  }

  static SharedPrefixWorkload parse(String params) {
    SpecParameters p = SpecParameters.parse(NAME, params, KEYS);
    SharedPrefixWorkload d = DEFAULTS;
    return new SharedPrefixWorkload(
        p.intValue("groups", d.groups, 1),
        p.doubleValue("alpha", d.alpha, 0),
        p.intValue("system", d.systemTokens, 0),
        p.intValue("question", d.questionTokens, 0),
        p.intValue("requests", d.requestCount, 0),
        p.intValue("output", d.outputTokens, 0),
        p.doubleValue("rate", d.rate, 0),
        p.longValue("seed", d.seed),
        p.intValue("vocab", d.vocab, 1));
  }

  @Override
  public String spec() {
    return ("%s:groups=%d,alpha=%s,system=%d,question=%d,requests=%d,output=%d,rate=%s,seed=%d,"
            + "vocab=%d")
        .formatted(
            NAME,
            groups,
            alpha,
            systemTokens,
            questionTokens,
            requestCount,
            outputTokens,
            rate,
            seed,
            vocab);
  }

  /**
   * The requests. The draws come from three streams forked from the seed (tokens, group choices,
   * arrival gaps), so changing {@code rate} does not change any prompt.
   */
  @Override
  public Stream<Request> requests() {
    SplitMix64 root = new SplitMix64(seed);
    SplitMix64 tokens = root.fork();
    SplitMix64 choices = root.fork();
    PoissonArrivals arrivals = new PoissonArrivals(rate, root.fork());
    int[][] system = new int[groups][];
    for (int g = 0; g < groups; g++) {
      system[g] = tokens.tokens(systemTokens, vocab);
    }
    ZipfDistribution popularity = new ZipfDistribution(groups, alpha);
    return RequestStreams.sequential(
        requestCount,
        i -> {
          int g = popularity.sample(choices);
          int[] prompt = new int[systemTokens + questionTokens];
          System.arraycopy(system[g], 0, prompt, 0, systemTokens);
          tokens.fillTokens(prompt, systemTokens, questionTokens, vocab);
          return new Request(arrivals.next(), prompt, outputTokens, Optional.of("group-" + g));
        });
  }
}
