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
 * tokens, identical on every rank, since the engine's replicated state depends on it; a real
 * model gets that from greedy decoding of replicated logits.
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
   * was written: greedy decoding.
   *
   * @param step the step that ended at the last known token
   * @return a token id, at least 0 and below the vocabulary size of the cache
   */
  int nextToken(ModelStep step);

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
