package io.kvtier.serving;

import io.kvtier.core.config.Parallelism;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.spi.KvLayout;
import java.util.Objects;

/**
 * What the serving engine needs of a model: its vocabulary and context, the check of a request,
 * the check of the pools' KV layout, the page slots of its state snapshots, and a runner per rank.
 * The engine ({@link GenerationEngines}, {@link ModelEngine}) never names a concrete model; a
 * command finds one by name through {@link ModelProvider}.
 *
 * <p>A model is immutable and thread-safe: the engine opens one runner per rank, each on its
 * rank's thread. Everything a runner returns must be a pure function of the tokens, identical on
 * every rank (see {@link ModelRunner}).
 */
public interface ServingModel {

  /**
   * The token ids the model reads and writes are {@code [0, vocabularySize())}.
   *
   * @return at least 1
   */
  int vocabularySize();

  /**
   * The most tokens (prompt plus output) of one sequence.
   *
   * @return at least 1
   */
  int maxContext();

  /**
   * Checks that a request fits the model: a non-empty prompt of vocabulary tokens whose length
   * plus {@code maxTokens} is within the context. The default checks exactly that.
   *
   * @param prompt the prompt's token ids
   * @param maxTokens tokens to generate
   * @param contextLimit the most tokens of one sequence, at most {@link #maxContext()}
   * @throws IllegalArgumentException naming what is wrong and the limit
   */
  default void checkRequest(int[] prompt, int maxTokens, int contextLimit) {
    Objects.requireNonNull(prompt, "prompt");
    if (prompt.length == 0) {
      throw new IllegalArgumentException("the prompt is empty: give at least one token");
    }
    if (maxTokens < 1) {
      throw new IllegalArgumentException("max_tokens=" + maxTokens + " must be >= 1");
    }
    int vocabulary = vocabularySize();
    for (int i = 0; i < prompt.length; i++) {
      if (prompt[i] < 0 || prompt[i] >= vocabulary) {
        throw new IllegalArgumentException(
            "token "
                + prompt[i]
                + " at index "
                + i
                + " is outside the vocabulary [0, "
                + vocabulary
                + ")");
      }
    }
    long total = (long) prompt.length + maxTokens;
    int limit = Math.min(contextLimit, maxContext());
    if (total > limit) {
      throw new IllegalArgumentException(
          "prompt of "
              + prompt.length
              + " tokens + max_tokens="
              + maxTokens
              + " = "
              + total
              + " tokens exceeds the context limit of "
              + limit
              + " tokens: shorten the prompt or ask for fewer tokens");
    }
  }

  /**
   * Checks that the configured KV layout is the model's whole layout (every KV head) and that its
   * heads split evenly over {@code ranks} ranks; each rank's pools then hold {@code kvHeads /
   * ranks} heads (tensor parallelism).
   *
   * @param layout {@code kvtier.*}'s layout, with the model's KV heads
   * @param ranks the ranks of the group
   * @throws IllegalArgumentException naming the keys to set, or the ranks to give
   */
  void checkLayout(KvLayout layout, int ranks);

  /**
   * The KV layout of one rank's pools in a group of {@code ranks} that splits the model as
   * {@code parallelism} says ({@code kvtier.parallel}). The default runs tensor parallelism only:
   * each rank's pools hold its shard of the heads, {@code kvHeads / ranks}; a model that can
   * split otherwise (context parallelism: every head, a share of each sequence's positions)
   * overrides this. The page size is the config's, since the replicated tree allocates the same
   * pages on every rank.
   *
   * @param layout {@code kvtier.*}'s layout, checked by {@link #checkLayout}
   * @param ranks the ranks of the group
   * @param parallelism how the ranks split the model
   * @return the layout of each rank's pools, with {@code layout}'s page size
   * @throws IllegalArgumentException as {@link #checkLayout}, or for a parallelism this model
   *     does not run, naming the key
   */
  default KvLayout rankLayout(KvLayout layout, int ranks, Parallelism parallelism) {
    if (parallelism.cp() && ranks > 1) {
      throw new IllegalArgumentException(
          "kvtier.parallel=cp: "
              + text().name()
              + " splits over ranks by its KV heads only (tensor parallelism); set"
              + " kvtier.parallel=tp (--parallel tp), or serve a GGUF model");
    }
    checkLayout(layout, ranks);
    return new KvLayout(
        layout.layers(),
        layout.kvHeads() / ranks,
        layout.headDim(),
        layout.dtypeBytes(),
        layout.pageSize());
  }

  /**
   * The page slots one snapshot of the model's per-sequence state takes in one rank's pools
   * (docs/HYBRID.md §5): 0 for a model of attention layers only, whose cached KV is all it needs.
   *
   * @param rankLayout the KV layout of one rank's pools (its shard of the heads)
   * @param devicePages the pages of the rank's device pool
   * @return the slots, the value {@code kvtier.snapshot-slots} must have
   * @throws IllegalArgumentException if a snapshot leaves no room for KV in the device pool,
   *     naming the fix
   */
  default int snapshotSlots(KvLayout rankLayout, int devicePages) {
    return 0;
  }

  /**
   * The model's text: its name, tokenizer and chat template, through which the HTTP server reads
   * text prompts and chat messages and writes the generated text. The default is {@link
   * ModelText#tokensOnly} (named after the class): a model without a tokenizer serves prompts of
   * token ids, and the server answers a text prompt or a chat with a 400 that says so.
   *
   * @return the text, an equal one on every call
   */
  default ModelText text() {
    return ModelText.tokensOnly(getClass().getSimpleName());
  }

  /**
   * Opens the runner of one rank, on that rank's thread.
   *
   * @param shard the rank, its device pool and, from the first step, its collective
   * @return the runner, used by that rank's engine only
   */
  ModelRunner openRunner(RankShard shard);
}
