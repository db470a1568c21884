package io.kvtier.core.rank;

/**
 * The milestones of each request as a {@link RankEngine} reaches them: arrival, admission with its
 * cached prefix, each generated token, the end of its prefill (its first token) and its end. For metrics and for the
 * simulator's timeline; the engine itself never reads anything back.
 *
 * <p>Every call comes from the rank's scheduler thread, inside the tick step named on the method,
 * at a replicated point: every rank of a healthy group makes the same calls, in the same order,
 * with the same arguments, so listening on one rank is enough. Arguments are primitives and
 * constants so that reporting allocates nothing.
 *
 * <p>A listener runs on the engine's hot path: it must be quick, must not throw, and must not call
 * the engine (a step is in progress). Every method does nothing by default.
 */
public interface RequestListener {
  /** The listener of an engine that has none: ignores everything. */
  RequestListener NONE = new RequestListener() {};

  /**
   * Step 1: the request was received and joined the waiting queue.
   *
   * @param tick the tick
   * @param id the request's id
   * @param promptTokens its prompt length
   */
  default void arrived(long tick, long id, int promptTokens) {}

  /**
   * Step 3: the request was admitted: its cached prefix is locked and its pages are allocated.
   * The engine calls {@link #admitted(long, long, int, int, int)}, whose default calls this one
   * with the L3 hits counted as host hits (they reach the device as load-backs from the host),
   * so the hit tokens add up to what {@link RankEngineStats} counts for the request: device,
   * host plus L3.
   *
   * @param tick the tick
   * @param id the request's id
   * @param deviceHitTokens prompt tokens found on the device
   * @param hostHitTokens prompt tokens being loaded back from the host, L3 hits included
   */
  default void admitted(long tick, long id, int deviceHitTokens, int hostHitTokens) {}

  /**
   * Step 3, with the L3 hits apart: the request was admitted, and the hit tokens are those
   * {@link RankEngineStats} counts for it, tier by tier. Override this one to tell L3 hits from
   * host hits; by default it calls {@link #admitted(long, long, int, int)} with their sum.
   *
   * @param tick the tick
   * @param id the request's id
   * @param deviceHitTokens prompt tokens found on the device
   * @param hostHitTokens prompt tokens being loaded back from the host that were there before
   *     the request came ({@link RankEngineStats#hostHitTokens()})
   * @param l3HitTokens prompt tokens being loaded back from the host that the request's L3
   *     prefetch fetched from the store ({@link RankEngineStats#l3HitTokens()})
   */
  default void admitted(
      long tick, long id, int deviceHitTokens, int hostHitTokens, int l3HitTokens) {
    admitted(tick, id, deviceHitTokens, hostHitTokens + l3HitTokens);
  }

  /**
   * Step 3, with the usable length (HYBRID.md §5): the request was admitted; the hit tokens per
   * tier are the match, {@code usableTokens} the prefix it resumes from (equal to their sum
   * without recurrent-state snapshots). By default it calls {@link #admitted(long, long, int,
   * int, int)}.
   *
   * @param tick the tick
   * @param id the request's id
   * @param deviceHitTokens prompt tokens matched on the device
   * @param hostHitTokens prompt tokens matched on the host that were there before the request
   * @param l3HitTokens prompt tokens matched on the host that its L3 prefetch fetched
   * @param usableTokens prompt tokens the request resumes from, not computed again
   */
  default void admitted(
      long tick,
      long id,
      int deviceHitTokens,
      int hostHitTokens,
      int l3HitTokens,
      int usableTokens) {
    admitted(tick, id, deviceHitTokens, hostHitTokens, l3HitTokens);
  }

  /**
   * Step 4: the model generated the request's next output token ({@code ModelRunner.nextToken}),
   * which the engine appended to the request. Called once per generated token, in order, before
   * {@link #prefilled} for the first one; the same tokens on every rank, since the engine's
   * replicated state holds them. This is how a server streams a request's output.
   *
   * @param tick the tick
   * @param id the request's id
   * @param token the token, the request's next output
   */
  default void token(long tick, long id, int token) {}

  /**
   * Step 4: as {@link #token(long, long, int)}, with the token's log-probabilities where the
   * request asked for them ({@link Sampling#logprobs()}); the engine calls this one, whose default
   * drops them and calls the other. The log-probabilities are the model's on this rank (every
   * rank's model has the same logits).
   *
   * @param tick the tick
   * @param id the request's id
   * @param token the token, the request's next output
   * @param logprob its log-probabilities, or null where the request did not ask
   */
  default void token(long tick, long id, int token, TokenLogprob logprob) {
    token(tick, id, token);
  }

  /**
   * Step 4: the log-probabilities of the prompt's tokens, for a request that asked ({@link
   * Sampling#promptLogprobs()}): one per prompt token after the first (which no position
   * predicts), in order, each from the logits of the position before it. Called once, in the
   * step that completes the prompt, before {@link #token} for its first output token; the same on
   * every rank.
   *
   * @param tick the tick
   * @param id the request's id
   * @param logprobs the entries of prompt tokens 1 to the prompt's length less one
   */
  default void promptLogprobs(long tick, long id, java.util.List<TokenLogprob> logprobs) {}

  /**
   * Step 4: the request's prompt KV is complete. A request that generates produced its first
   * token in the same forward step, so this tick is its time to first token.
   *
   * @param tick the tick
   * @param id the request's id
   */
  default void prefilled(long tick, long id) {}

  /**
   * Step 1 or 3: the request was rejected, for the reason given; {@link #ended} with {@link
   * RequestOutcome#REJECTED} follows at once. Step 1 rejects a request that cannot enter at all
   * (a token outside the vocabulary, a prompt plus output budget past the engine's limit), step
   * 3 one whose KV can never fit the device pool. Rejections are rare, so the reason is a
   * string; it is the same on every rank.
   *
   * @param tick the tick
   * @param id the request's id
   * @param reason what was wrong with it
   */
  default void rejected(long tick, long id, String reason) {}

  /**
   * Step 4: the load-back of the request's cached prefix failed (a copy error, or host bytes
   * whose checksum did not match, on any rank) and, under {@code LoadFailurePolicy.RECOMPUTE},
   * the request went back to the head of the waiting queue; the counts of its admission were
   * taken back, and it will be admitted again ({@link #admitted(long, long, int, int, int, int)}
   * with the prefix that is left) and recompute the rest. Under {@code FAIL} the engine calls
   * {@link #ended} with {@link RequestOutcome#LOAD_FAILED} instead.
   *
   * @param tick the tick
   * @param id the request's id
   * @param lostTokens the prompt tokens of the failed load-back, to be computed again
   */
  default void requeued(long tick, long id, int lostTokens) {}

  /**
   * Step 3: a request that awaits a transfer ({@link TransferRole#AWAIT}) was admitted, after
   * {@link #admitted(long, long, int, int, int, int)}: how many of the pages its handle names it
   * found. Pages it did not find are computed like any miss.
   *
   * @param tick the tick
   * @param id the request's id
   * @param pagesExpected the pages the handle names ({@link RankRequest#transferPages()})
   * @param pagesFetched prompt pages its L3 prefetch fetched from the store and it resumes from
   * @param pagesRecomputed pages of the handle, among those a cache hit may cover (all but a
   *     last page that ends the prompt, which every hit computes again), that it found in no
   *     tier and computes
   */
  default void awaited(
      long tick, long id, int pagesExpected, int pagesFetched, int pagesRecomputed) {}

  /**
   * Step 5: the publish of a request's prompt ({@link TransferRole#PUBLISH}) reached its agreed
   * end; {@link #ended} with {@link RequestOutcome#FINISHED} follows at once. Its pages were
   * locked from the request's finish until now.
   *
   * @param tick the tick
   * @param id the request's id
   * @param pagesPublished the prompt's full pages the L3 store holds from the first: all of them,
   *     fewer when the write failed on some rank (or host pages were short), 0 without an L3
   *     store
   */
  default void published(long tick, long id, int pagesPublished) {}

  /**
   * The request left the engine; called once per arrived request.
   *
   * @param tick the tick
   * @param id the request's id
   * @param outcome how it ended
   */
  default void ended(long tick, long id, RequestOutcome outcome) {}
}
