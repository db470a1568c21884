package io.kvtier.serving;

import io.kvtier.core.rank.Sampling;
import io.kvtier.core.rank.TransferRole;
import java.util.Objects;

/**
 * What the HTTP server needs from the engine that serves the model: one call per request, its
 * tokens streamed back as the engine's ticks produce them. Many requests run at once (continuous
 * batching); the implementation owns the rank group and its loop.
 *
 * <p>This is the seam between the HTTP layer ({@code io.kvtier.server}) and the engine
 * ({@code io.kvtier.serving}): the server validates and parses requests, the engine checks what
 * only it knows (context limit, pool capacity) and generates.
 */
public interface GenerationEngine extends AutoCloseable {

  /**
   * The model's vocabulary: prompts hold token ids in {@code [0, vocabularySize())}.
   *
   * @return the vocabulary size
   */
  int vocabularySize();

  /**
   * The longest {@code prompt.length + maxTokens} the engine accepts.
   *
   * @return the context limit in tokens
   */
  int contextLimit();

  /**
   * The served model's text: its name, tokenizer and chat template ({@link ServingModel#text()}).
   *
   * @return the text
   */
  ModelText text();

  /**
   * Whether requests in one namespace share cached prefixes: then a prompt that a finished
   * request computed is matched, not computed again, by the requests after it. The server uses it
   * to compute a prompt once for several choices ({@code n}: one one-token generation caches the
   * prompt, then the choices start from it); an engine that gives each request a cache of its own
   * says false, the default, and the choices run at once.
   *
   * @return whether prefixes are shared
   */
  default boolean cachesPrefixes() {
    return false;
  }

  /**
   * Starts a generation and returns at once; never waits for the model. The stream's callbacks
   * run on the engine's thread, in order: at most one {@link TokenStream#admitted}, then {@link
   * TokenStream#token} per generated token, then exactly one of {@link TokenStream#finished} or
   * {@link TokenStream#failed}.
   *
   * @param request the prompt and budget
   * @param stream where tokens and the end go
   * @return a handle to cancel the generation (a client that went away)
   * @throws EngineBusyException if the waiting queue is full (the server answers 429)
   * @throws IllegalArgumentException if the request exceeds the context limit or the vocabulary
   * @throws io.kvtier.core.rank.RankGroupFailedException if the rank group failed; every later
   *     call throws it too (the server answers 503)
   */
  Generation submit(GenerationRequest request, TokenStream stream);

  /**
   * The engine's counters for metrics and tests.
   *
   * @return a snapshot
   */
  EngineStats stats();

  /** Stops the rank group; generations still running fail with a closed-engine cause. */
  @Override
  void close();

  /**
   * One generation's input. The prompt is handed over, not copied: the request holds the
   * caller's array, which must not change until {@link #submit} returns; {@link #submit} copies
   * it once into the engine's request (the request path's one copy of the caller's array), so
   * that what the caller does with the array afterwards reaches neither the engine nor the cache.
   *
   * @param prompt token ids, each in the vocabulary
   * @param maxTokens tokens to generate, at least 1
   * @param namespace the cache namespace its prefix is matched and cached in (the tenant's and
   *     {@code cache_salt}'s, {@code io.kvtier.core.tenant.CacheNamespaces}); 0, the shared one,
   *     by default. An engine without prefix caching gives each request its own instead
   * @param transfer its part in moving the prompt's KV between replicas through the L3 store:
   *     {@code PUBLISH} on a prefill replica (its {@link Completion#transfer()} says the pages
   *     published, and it ends only once they are), {@code AWAIT} on a decode replica with the
   *     pages the handle names; {@code NONE} by default
   * @param transferPages with {@code AWAIT}, the pages the handle names; 0 otherwise
   * @param sampling how its tokens are chosen ({@link Sampling#GREEDY} by default); a model that
   *     decodes greedily only refuses any other ({@link #submit} throws)
   */
  record GenerationRequest(
      int[] prompt,
      int maxTokens,
      long namespace,
      TransferRole transfer,
      int transferPages,
      Sampling sampling) {
    /** Validates the budget; the prompt's tokens are checked by {@link #submit}. */
    public GenerationRequest {
      Objects.requireNonNull(prompt, "prompt");
      Objects.requireNonNull(transfer, "transfer");
      Objects.requireNonNull(sampling, "sampling");
      if (maxTokens < 1) {
        throw new IllegalArgumentException("maxTokens=" + maxTokens + " must be at least 1");
      }
      if (transferPages < 0 || (transfer != TransferRole.AWAIT && transferPages != 0)) {
        throw new IllegalArgumentException(
            "transferPages="
                + transferPages
                + " with transfer "
                + transfer
                + ": give pages >= 0 with AWAIT only");
      }
    }

    /**
     * A greedy request.
     *
     * @param prompt token ids, each in the vocabulary
     * @param maxTokens tokens to generate, at least 1
     * @param namespace the cache namespace
     * @param transfer its part in a prompt KV transfer
     * @param transferPages with {@code AWAIT}, the pages the handle names; 0 otherwise
     */
    public GenerationRequest(
        int[] prompt, int maxTokens, long namespace, TransferRole transfer, int transferPages) {
      this(prompt, maxTokens, namespace, transfer, transferPages, Sampling.GREEDY);
    }

    /**
     * A request without a transfer.
     *
     * @param prompt token ids, each in the vocabulary
     * @param maxTokens tokens to generate, at least 1
     * @param namespace the cache namespace
     */
    public GenerationRequest(int[] prompt, int maxTokens, long namespace) {
      this(prompt, maxTokens, namespace, TransferRole.NONE, 0);
    }

    /**
     * A request in the shared namespace 0.
     *
     * @param prompt token ids, each in the vocabulary
     * @param maxTokens tokens to generate, at least 1
     */
    public GenerationRequest(int[] prompt, int maxTokens) {
      this(prompt, maxTokens, 0);
    }
  }

  /** Where one generation's progress goes; called on the engine's thread, never concurrently. */
  interface TokenStream {
    /**
     * The request was admitted; its cached prefix is known.
     *
     * @param cachedTokens prompt tokens whose KV came from the cache and that the model will not
     *     compute: the usable part of the match ({@link Completion#cachedTokens()})
     * @param deviceHitTokens matched tokens already on the device
     * @param hostHitTokens matched tokens loaded back from the host tier
     * @param l3HitTokens matched tokens fetched from L3
     */
    default void admitted(
        int cachedTokens, int deviceHitTokens, int hostHitTokens, int l3HitTokens) {}

    /**
     * One generated token.
     *
     * @param token the token id
     */
    void token(int token);

    /**
     * One generated token with its log-probabilities, where the request asked for them ({@link
     * Sampling#logprobs()}); the engine calls this one, whose default drops them.
     *
     * @param token the token id
     * @param logprob its log-probabilities, or null where the request did not ask
     */
    default void token(int token, io.kvtier.core.rank.TokenLogprob logprob) {
      token(token);
    }

    /**
     * The prompt's tokens' log-probabilities, where the request asked for them ({@link
     * Sampling#promptLogprobs()}): one per prompt token after the first, in order. Called once,
     * before the first {@link #token}; the default drops them.
     *
     * @param logprobs the entries
     */
    default void promptLogprobs(java.util.List<io.kvtier.core.rank.TokenLogprob> logprobs) {}

    /**
     * The generation ended normally (its budget reached, or cancelled).
     *
     * @param completion every generated token and the cache split
     */
    void finished(Completion completion);

    /**
     * The generation failed: {@link RequestFailedException} (rejected, load failed, aborted) or
     * the rank group's failure.
     *
     * @param cause why
     */
    void failed(Throwable cause);
  }

  /** A running generation. */
  interface Generation {
    /** Ends the generation early (a stop sequence matched, or the client went away). */
    void cancel();
  }

  /** The waiting queue is full; try again later. */
  final class EngineBusyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what is full
     */
    public EngineBusyException(String message) {
      super(message);
    }
  }
}
