package io.kvtier.core.rank;

import java.util.Objects;

/**
 * One request's share of a forward pass, as the engine hands it to the {@link ModelRunner}.
 *
 * <p>The arrays belong to the engine and are valid only during the call: a model reads them and
 * must neither keep nor modify them.
 *
 * @param requestId the request
 * @param namespace the request's cache namespace
 * @param tokens the request's known tokens: the prompt, then the generated tokens; at least
 *     {@code to} of them are valid
 * @param from the first token whose KV this step computes (or checks)
 * @param to one past the last such token
 * @param pageTable the request's device page slots, one per page of tokens, covering at least
 *     {@code to} tokens
 */
public record ModelStep(
    long requestId, long namespace, int[] tokens, int from, int to, int[] pageTable) {

  /** Validates the range. */
  public ModelStep {
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(pageTable, "pageTable");
    if (from < 0 || from > to || to > tokens.length) {
      throw new IllegalArgumentException(
          "request id="
              + requestId
              + ": range ["
              + from
              + ", "
              + to
              + ") is not within the "
              + tokens.length
              + " tokens");
    }
  }
}
