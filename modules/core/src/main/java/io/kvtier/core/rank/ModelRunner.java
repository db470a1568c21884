package io.kvtier.core.rank;

import java.util.List;

/**
 * What the model does in step 4 ({@code forward}) of a tick, for one rank: for each running
 * request it computes the KV of the request's new tokens, layer by layer, into the request's
 * device pages, and in decode it produces the next token.
 *
 * <p>The engine calls {@link #writeLayer} once per layer in layer order, and after each layer
 * streams that layer of a prepared backup to the host tier, which is why the model works layer
 * by layer. Everything a model returns ({@link #nextToken}) must be a pure function of the
 * tokens (and of the request's seed, for one that samples), identical on every rank, since the
 * engine's replicated state depends on it; a real model gets that from replicated logits, read
 * greedily or through {@link Sampler}.
 *
 * <p>Called from the rank's scheduler thread only.
 */
public interface ModelRunner {

  /**
   * The number of transformer layers; the engine calls {@link #writeLayer} for each.
   *
   * @return at least 1
   */
  int layers();

  /**
   * Computes the KV of the step's tokens in one layer and writes it into the request's device
   * pages.
   *
   * @param step the request, its tokens, the range to compute and its page table
   * @param layer the layer, from 0 to {@code layers() - 1}, in order
   */
  void writeLayer(ModelStep step, int layer);

  /**
   * The token that follows {@code step.tokens()[0 .. step.to())}, after every layer of the step
   * was written: the largest logit, or, for a model that {@link #samples()}, {@link
   * Sampler#choose} under {@code step.sampling()} at position {@code step.to()}.
   *
   * @param step the step that ended at the last known token
   * @return a token id, at least 0 and below the vocabulary size of the cache
   */
  int nextToken(ModelStep step);

  /**
   * Whether this model chooses tokens under a request's {@link ModelStep#sampling()} ({@link
   * Sampler#choose} over its logits, where greedy decoding takes the largest): then the engine
   * admits requests that sample, else it rejects them with a reason. False by default: a model
   * that only decodes greedily serves greedy requests only.
   *
   * @return whether requests may sample
   */
  default boolean samples() {
    return false;
  }

  /**
   * Whether this model reports the log-probabilities of the tokens it chooses: it chooses each
   * through {@link Sampler#choose(float[], int, int, ModelStep, int)}, which records them in the
   * step's {@link ModelStep#logprobs()} where the request asked ({@link Sampling#logprobs()}).
   * Then the engine admits such requests, else it rejects them with a reason. False by default.
   *
   * @return whether requests may ask for log-probabilities
   */
  default boolean reportsLogprobs() {
    return false;
  }

  /**
   * Whether this model reports the log-probabilities of a request's prompt tokens ({@link
   * Sampling#promptLogprobs()}, OpenAI's {@code echo}) through {@link #recordPromptLogprobs}.
   * Then the engine admits such requests, else it rejects them with a reason. False by default.
   *
   * @return whether requests may ask for their prompt's log-probabilities
   */
  default boolean reportsPromptLogprobs() {
    return false;
  }

  /**
   * Records the log-probability of each prompt token that a prefill step's positions predict:
   * for every position {@code p} of {@code [step.from(), step.to())} with {@code p + 1 <
   * step.promptLength()}, {@code step.logprobs().record(p + 1, logits, .., tokens[p + 1])} from
   * the logits at {@code p} (the model's own, before any sampling adjustment). The engine calls
   * it after every layer of each prefill step of a request that asked, before {@link #nextToken};
   * the prompt's first token has no log-probability. Only of a model that {@link
   * #reportsPromptLogprobs()}; the default throws.
   *
   * @param step the prefill step whose layers are all written
   */
  default void recordPromptLogprobs(ModelStep step) {
    throw new UnsupportedOperationException(
        "request id="
            + step.requestId()
            + " asks for its prompt's log-probabilities, which this model does not report");
  }

  /**
   * Whether the engine may hand this model the decode steps of several requests together
   * ({@link #writeDecodeLayer}, {@link #nextDecodeTokens}) rather than one request at a time.
   * Why: a decode step computes one position, so a model that multiplies each weight row by
   * every request's position in one pass reads its weights once per tick instead of once per
   * request, and sums a layer's partial outputs across ranks in one collective for them all.
   * The results must be the bits the one-at-a-time calls give (MODELS.md's exactness rule).
   * False by default: the engine then calls {@link #writeLayer} and {@link #nextToken} per
   * request, in running order, as always.
   *
   * @return whether to batch decode steps
   */
  default boolean batchesDecode() {
    return false;
  }

  /**
   * Computes one layer of several requests' decode steps: each step one new position (its last
   * generated token, {@code to() == from() + 1}, past the prompt). Called, when {@link
   * #batchesDecode} is true, for layers 0 to {@code layers() - 1} in order with the same steps
   * in the same order, on every rank alike, after the tick's other steps. By default calls
   * {@link #writeLayer} for each step in order.
   *
   * @param steps the steps, at least one, of distinct requests
   * @param layer the layer
   */
  default void writeDecodeLayer(List<ModelStep> steps, int layer) {
    for (ModelStep step : steps) {
      writeLayer(step, layer);
    }
  }

  /**
   * The next token of each step of {@link #writeDecodeLayer}, after its last layer: {@code
   * tokens[i]} follows {@code steps.get(i)}, as {@link #nextToken} would give it. By default
   * calls {@link #nextToken} for each.
   *
   * @param steps the steps of the layers just written, in the same order
   * @param tokens where the tokens go, at least {@code steps.size()} long
   */
  default void nextDecodeTokens(List<ModelStep> steps, int[] tokens) {
    for (int i = 0; i < steps.size(); i++) {
      tokens[i] = nextToken(steps.get(i));
    }
  }

  /**
   * Tokens a draft proposes per decode step (speculative decoding, docs/MODELS.md): 0, the
   * default, for none. With {@code k > 0} a decode step of a request is {@link #propose} of up to
   * {@code k} tokens, then one pass of every layer ({@link #writeLayer}) over the last known token
   * and the proposals, then {@link #verifyTokens}; the engine keeps the longest run of proposals
   * that agrees with the target's own tokens and the target's next token after it, so the output
   * is the non-speculative output token for token. Positions past the kept run are rolled back:
   * the request's computed length does not pass them, so their K/V is never inserted, backed up
   * or matched, and the next step writes them again before anyone reads them.
   *
   * @return at least 0
   */
  default int speculativeTokens() {
    return 0;
  }

  /**
   * Drafts {@code count} tokens after the step's last known token: {@code proposals[i]} is the
   * draft's guess for the token at position {@code step.from() + 1 + i} (for a request that
   * samples, best drawn by {@link Sampler} with the step's sampling at that position: the
   * target's own draw, so close distributions agree). {@code step} is the one
   * position {@code [from, from + 1)} whose token is known and whose K/V is not yet computed. The
   * draft may write K/V of the request's pages at positions {@code >= step.from()} only (they are
   * the request's own, past its computed length). Must be a pure function of the tokens and the
   * pages, the same on every rank.
   *
   * @param step the position the proposals follow
   * @param count tokens to propose, at least 1
   * @param proposals where they go, at least {@code count} long
   * @throws UnsupportedOperationException if {@link #speculativeTokens()} is 0 (the default)
   */
  default void propose(ModelStep step, int count, int[] proposals) {
    throw new UnsupportedOperationException("this model has no draft");
  }

  /**
   * After every layer of {@code step} was written: the target's token after each of its
   * positions, {@code tokens[i]} following position {@code step.from() + i} (and chosen, for a
   * sampling request, at position {@code step.from() + i + 1}), as {@link #nextToken} would give
   * each alone. By default, for a step of one position, {@link
   * #nextToken}.
   *
   * @param step the step just written, of {@code n = to - from >= 1} positions
   * @param tokens where the tokens go, at least {@code n} long
   * @throws UnsupportedOperationException by default, for more than one position
   */
  default void verifyTokens(ModelStep step, int[] tokens) {
    if (step.to() - step.from() != 1) {
      throw new UnsupportedOperationException("this model verifies one position at a time");
    }
    tokens[0] = nextToken(step);
  }

  /**
   * Checks the KV of a cached prefix that came (partly) from the host tier, when the request is
   * about to run for the first time after its load-backs committed. A model that cannot check
   * returns 0.
   *
   * @param step the request with {@code from = 0} and {@code to} = the prefix length (whole
   *     pages), and its page table
   * @return the number of pages whose KV is wrong
   */
  default int verifyPrefix(ModelStep step) {
    return 0;
  }

  /**
   * The page slots one snapshot of this model's recurrent state takes (HYBRID.md §5): 0 for a
   * model without recurrent layers. It must equal the cache's {@code kvtier.snapshot-slots}; the
   * engine refuses to start otherwise.
   *
   * @return slots per snapshot, at least 0
   */
  default int snapshotSlots() {
    return 0;
  }

  /**
   * The block of the page slots whose bytes are final once layer {@code layer} is written, which
   * a prepared backup streams to the host then (the request's pages and interval snapshots, that
   * block of each): -1 for none. Blocks that no layer names, up to {@link #pageBlocks()}, are
   * streamed after the last layer. A model whose pages hold one block per layer and whose layer
   * {@code l} writes block {@code l} only (the default) lets each block go as soon as it is
   * written; one that writes a block after its layer (a snapshot packed over every block,
   * docs/HYBRID.md §4) names none, so that every block goes after the last layer. The blocks
   * named are 0, 1, ... in layer order.
   *
   * @param layer the layer, from 0 to {@code layers() - 1}
   * @return the block, or -1; {@code layer} by default
   */
  default int streamedBlock(int layer) {
    return layer;
  }

  /**
   * The blocks of a page slot of the pools this model runs on: the layers of their KV layout.
   *
   * @return at least 1; {@link #layers()} by default
   */
  default int pageBlocks() {
    return layers();
  }

  /**
   * The request finished or was aborted: drop any state kept for it.
   *
   * @param requestId the request
   */
  default void released(long requestId) {}
}
