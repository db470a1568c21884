package io.kvtier.core.rank;

import java.util.Arrays;
import java.util.Objects;

/**
 * A request as every rank sees it: rank 0 receives it from the outside and broadcasts it in the
 * tick's {@link TickCommands}, so that every rank queues the same request at the same tick.
 *
 * <p>The prompt is copied in and out, so a request is a true value: the constructor's copy is
 * the one copy of the caller's array on the request path (a caller may change or reuse its array
 * as soon as the request is built). On each rank the engine then copies it once more into the
 * request's own token array, which also takes its output, and hands that one array to the cache
 * from admission to finish.
 *
 * @param id the caller's id, unique among the requests that are waiting or running
 * @param namespace the cache namespace (LoRA id or cache salt); 0 by default
 * @param priority the eviction priority of the nodes the request inserts
 * @param maxOutputTokens tokens the request generates after its prompt, at least 0
 * @param prompt the prompt's token ids, at least one, each at least 0
 * @param transfer its part in a transfer of the prompt's KV between replicas; {@link
 *     TransferRole#NONE} by default
 * @param transferPages with {@link TransferRole#AWAIT}, the prompt pages the transfer's handle
 *     names (those the prefill side published), at least 0; 0 otherwise
 * @param sampling how its tokens are chosen; {@link Sampling#GREEDY} by default. A request that
 *     samples enters only where the model {@link ModelRunner#samples()}
 */
public record RankRequest(
    long id,
    long namespace,
    int priority,
    int maxOutputTokens,
    int[] prompt,
    TransferRole transfer,
    int transferPages,
    Sampling sampling) {

  /** Validates the fields and copies the prompt. */
  public RankRequest {
    Objects.requireNonNull(prompt, "prompt");
    Objects.requireNonNull(transfer, "transfer");
    Objects.requireNonNull(sampling, "sampling");
    if (transferPages < 0 || (transfer != TransferRole.AWAIT && transferPages != 0)) {
      throw new IllegalArgumentException(
          "request id="
              + id
              + ": transferPages="
              + transferPages
              + " with transfer "
              + transfer
              + "; give pages >= 0 with AWAIT only");
    }
    if (prompt.length == 0) {
      throw new IllegalArgumentException(
          "request id=" + id + " has an empty prompt: a request needs at least one token");
    }
    if (maxOutputTokens < 0) {
      throw new IllegalArgumentException(
          "request id=" + id + ": maxOutputTokens=" + maxOutputTokens + " must be >= 0");
    }
    prompt = prompt.clone();
    for (int i = 0; i < prompt.length; i++) {
      if (prompt[i] < 0) {
        throw new IllegalArgumentException(
            "request id="
                + id
                + ": prompt["
                + i
                + "]="
                + prompt[i]
                + " is negative; token ids are >= 0");
      }
    }
  }

  /**
   * An ordinary request ({@link TransferRole#NONE}).
   *
   * @param id the caller's id
   * @param namespace the cache namespace
   * @param priority the eviction priority
   * @param maxOutputTokens tokens to generate
   * @param prompt the prompt
   */
  public RankRequest(long id, long namespace, int priority, int maxOutputTokens, int[] prompt) {
    this(id, namespace, priority, maxOutputTokens, prompt, TransferRole.NONE, 0);
  }

  /**
   * A greedy request.
   *
   * @param id the caller's id
   * @param namespace the cache namespace
   * @param priority the eviction priority
   * @param maxOutputTokens tokens to generate
   * @param prompt the prompt
   * @param transfer its part in a transfer
   * @param transferPages with AWAIT, the pages the handle names; 0 otherwise
   */
  public RankRequest(
      long id,
      long namespace,
      int priority,
      int maxOutputTokens,
      int[] prompt,
      TransferRole transfer,
      int transferPages) {
    this(
        id, namespace, priority, maxOutputTokens, prompt, transfer, transferPages, Sampling.GREEDY);
  }

  /**
   * This request as the prefill side of a transfer ({@link TransferRole#PUBLISH}).
   *
   * @return a copy
   */
  public RankRequest publishing() {
    return new RankRequest(
        id, namespace, priority, maxOutputTokens, prompt, TransferRole.PUBLISH, 0, sampling);
  }

  /**
   * This request as the decode side of a transfer ({@link TransferRole#AWAIT}).
   *
   * @param pages the prompt pages the handle names
   * @return a copy
   */
  public RankRequest awaitingTransfer(int pages) {
    return new RankRequest(
        id, namespace, priority, maxOutputTokens, prompt, TransferRole.AWAIT, pages, sampling);
  }

  /**
   * A request in namespace 0 with priority 0.
   *
   * @param id the id
   * @param prompt the prompt
   * @param maxOutputTokens tokens to generate
   * @return the request
   */
  public static RankRequest of(long id, int[] prompt, int maxOutputTokens) {
    return new RankRequest(id, 0, 0, maxOutputTokens, prompt);
  }

  /**
   * A copy of the prompt.
   *
   * @return a new array
   */
  @Override
  public int[] prompt() {
    return prompt.clone();
  }

  /**
   * The prompt length.
   *
   * @return tokens
   */
  public int promptLength() {
    return prompt.length;
  }

  /** The prompt itself, for the engine, which never modifies it. */
  int[] promptArray() {
    return prompt;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RankRequest r
        && id == r.id
        && namespace == r.namespace
        && priority == r.priority
        && maxOutputTokens == r.maxOutputTokens
        && transfer == r.transfer
        && transferPages == r.transferPages
        && sampling.equals(r.sampling)
        && Arrays.equals(prompt, r.prompt);
  }

  @Override
  public int hashCode() {
    int h = Objects.hash(id, namespace, priority, maxOutputTokens) * 31 + Arrays.hashCode(prompt);
    h = transfer == TransferRole.NONE ? h : h * 31 + Objects.hash(transfer, transferPages);
    return sampling.equals(Sampling.GREEDY) ? h : h * 31 + sampling.hashCode();
  }

  @Override
  public String toString() {
    return "RankRequest[id="
        + id
        + ", namespace="
        + namespace
        + ", priority="
        + priority
        + ", maxOutputTokens="
        + maxOutputTokens
        + ", promptLength="
        + prompt.length
        + (transfer == TransferRole.NONE
            ? ""
            : ", transfer="
                + transfer
                + (transfer == TransferRole.AWAIT ? "/" + transferPages : ""))
        + (sampling.equals(Sampling.GREEDY) ? "" : ", " + sampling)
        + "]";
  }
}
