package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A request that asks for its prompt's log-probabilities ({@link Sampling#promptLogprobs()}):
 * over a prefill chunked in 8-token steps, the model records each step's positions and the
 * engine reports all of them once, in order, before the first output token, on every rank alike;
 * the request matches none of the same prompt already cached (its pages still join the cache);
 * a model that does not report them gets the request rejected with the reason.
 */
@Timeout(60)
class PromptLogprobsTest {
  private static final int PAGE = 4;
  private static final int VOCAB = 64;
  private static final CacheConfig CACHE = CacheConfig.of(PAGE, 64, 128).withVocabSize(VOCAB);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(8);

  /** Records prompt positions from rows that favour token {@code position % VOCAB}. */
  static final class ReportingModel extends RankHarness.CountingModel {
    final List<int[]> steps = new ArrayList<>();

    @Override
    public boolean reportsLogprobs() {
      return true;
    }

    @Override
    public boolean reportsPromptLogprobs() {
      return true;
    }

    @Override
    public void recordPromptLogprobs(ModelStep step) {
      steps.add(new int[] {step.from(), step.to()});
      int[] tokens = step.tokens();
      for (int p = step.from(); p < step.to() && p + 1 < step.promptLength(); p++) {
        float[] row = new float[VOCAB];
        row[(p + 1) % VOCAB] = 3;
        step.logprobs().record(p + 1, row, 0, VOCAB, tokens[p + 1]);
      }
    }

    @Override
    public int nextToken(ModelStep step) {
      return Sampler.choose(new float[VOCAB], 0, VOCAB, step, step.to());
    }
  }

  /** The events of one rank, in order. */
  static final class Events implements RequestListener {
    final List<String> log = new ArrayList<>();
    final List<TokenLogprob> prompt = new ArrayList<>();

    @Override
    public void admitted(long tick, long id, int device, int host, int l3, int usableTokens) {
      log.add("admitted " + id + " usable " + usableTokens);
    }

    @Override
    public void promptLogprobs(long tick, long id, List<TokenLogprob> logprobs) {
      log.add("prompt " + id + " " + logprobs.size());
      prompt.addAll(logprobs);
    }

    @Override
    public void token(long tick, long id, int token, TokenLogprob logprob) {
      log.add("token " + id);
    }

    @Override
    public void rejected(long tick, long id, String reason) {
      log.add("rejected " + id + ": " + reason);
    }
  }

  private static int[] prompt() {
    int[] p = new int[21];
    for (int i = 0; i < p.length; i++) {
      p[i] = 5 + i;
    }
    return p;
  }

  private static List<Object> run(int ranks, java.util.function.IntFunction<ModelRunner> models)
      throws Exception {
    Sampling asking = Sampling.GREEDY.withLogprobs(1).withPromptLogprobs(true);
    List<RankRequest> requests =
        List.of(
            new RankRequest(1, 0, 0, 2, prompt()),
            new RankRequest(2, 0, 0, 2, prompt(), TransferRole.NONE, 0, asking));
    try (RankHarness h =
        new RankHarness(ranks, CACHE, ENGINE, java.util.Map.of(), (r, t) -> t, models)) {
      List<Events> events = new ArrayList<>();
      for (RankEngine e : h.engines) {
        Events ev = new Events();
        e.setRequestListener(ev);
        events.add(ev);
      }
      // The second request comes at tick 30, once the first has cached the prompt.
      List<Object> digests =
          h.digestsUntilDrained(
              t ->
                  t == 0
                      ? TickCommands.arrive(List.of(requests.get(0)))
                      : t == 30
                          ? new TickCommands(List.of(requests.get(1)), new long[0], true)
                          : TickCommands.NONE,
              200);
      return List.of(digests, events);
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void thePromptsLogprobsComeOnceInOrderAndTheCacheIsNotMatched(int ranks) throws Exception {
    List<ReportingModel> models = new ArrayList<>();
    List<Object> out =
        run(
            ranks,
            r -> {
              ReportingModel m = new ReportingModel();
              synchronized (models) {
                models.add(m);
              }
              return m;
            });
    @SuppressWarnings("unchecked")
    List<Object> digests = (List<Object>) out.get(0);
    @SuppressWarnings("unchecked")
    List<Events> events = (List<Events>) out.get(1);
    for (Object d : digests) {
      assertThat(d).isEqualTo(digests.getFirst());
    }
    Events first = events.getFirst();
    assertThat(first.log)
        .containsSubsequence(
            "admitted 1 usable 0", "admitted 2 usable 0", "prompt 2 20", "token 2", "token 2");
    assertThat(first.log).filteredOn(s -> s.startsWith("prompt")).hasSize(1);
    int[] prompt = prompt();
    assertThat(first.prompt).hasSize(20);
    for (int i = 0; i < 20; i++) {
      TokenLogprob lp = first.prompt.get(i);
      assertThat(lp.token()).isEqualTo(prompt[i + 1]);
      assertThat(lp.topTokens()).containsExactly((i + 1) % VOCAB);
    }
    for (Events e : events) {
      assertThat(e.log).isEqualTo(first.log);
      assertThat(describe(e.prompt)).isEqualTo(describe(first.prompt));
    }
    for (ReportingModel m : models) {
      assertThat(m.steps)
          .as("the whole prompt computed in 8-token chunks, each recorded")
          .containsExactly(new int[] {0, 8}, new int[] {8, 16}, new int[] {16, 21});
    }
  }

  private static List<String> describe(List<TokenLogprob> logprobs) {
    return logprobs.stream()
        .map(
            lp ->
                lp.token()
                    + " "
                    + Float.floatToIntBits(lp.logprob())
                    + " "
                    + java.util.Arrays.toString(lp.topTokens())
                    + " "
                    + java.util.Arrays.toString(lp.topLogprobs()))
        .toList();
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void aModelThatDoesNotReportThemRejectsTheRequest(int ranks) throws Exception {
    List<Object> out = run(ranks, r -> new RankHarness.CountingModel());
    @SuppressWarnings("unchecked")
    List<Events> events = (List<Events>) out.get(1);
    for (Events e : events) {
      assertThat(e.log)
          .anySatisfy(
              s ->
                  assertThat(s)
                      .startsWith("rejected 2: it asks for its prompt's log-probabilities")
                      .contains("the model does not report them"));
      assertThat(e.log).noneMatch(s -> s.startsWith("prompt"));
    }
  }
}
