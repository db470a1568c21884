package io.kvtier.simulator.workload;

import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * One request of a workload. The prompt array is copied on the way in and out, so a request is a
 * true value; use {@link #promptLength()} and {@link #token(int)} to read it without a copy.
 *
 * @param arrivalMillis when the request arrives, in milliseconds from the start of the workload,
 *     at least 0
 * @param prompt the prompt's token ids, at least one, each at least 0
 * @param maxOutputTokens how many tokens the request may generate, at least 0 (0: prefill only)
 * @param contextId the conversation, document or prompt group the request belongs to, if the
 *     workload knows it
 */
public record Request(
    long arrivalMillis, int[] prompt, int maxOutputTokens, Optional<String> contextId) {

  /** Validates the fields and copies the prompt. */
  public Request {
    Objects.requireNonNull(prompt, "prompt");
    Objects.requireNonNull(contextId, "contextId");
    if (arrivalMillis < 0) {
      throw new IllegalArgumentException("arrivalMillis=" + arrivalMillis + " must be >= 0");
    }
    if (prompt.length == 0) {
      throw new IllegalArgumentException("prompt is empty: a request needs at least one token");
    }
    if (maxOutputTokens < 0) {
      throw new IllegalArgumentException("maxOutputTokens=" + maxOutputTokens + " must be >= 0");
    }
    prompt = prompt.clone();
    for (int i = 0; i < prompt.length; i++) {
      if (prompt[i] < 0) {
        throw new IllegalArgumentException(
            "prompt[" + i + "]=" + prompt[i] + " is negative: token ids must be >= 0");
      }
    }
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
   * @return the token count
   */
  public int promptLength() {
    return prompt.length;
  }

  /**
   * One token of the prompt.
   *
   * @param index the position, in {@code [0, promptLength())}
   * @return the token id
   */
  public int token(int index) {
    return prompt[Objects.checkIndex(index, prompt.length)];
  }

  /**
   * The length of the longest common prefix of this prompt and another request's.
   *
   * @param other the other request
   * @return the number of equal leading tokens
   */
  public int commonPrefixLength(Request other) {
    Objects.requireNonNull(other, "other");
    int m = Arrays.mismatch(prompt, other.prompt);
    return m < 0 ? prompt.length : m;
  }

  /** Requests are equal when all fields are, the prompt compared by content. */
  @Override
  public boolean equals(Object o) {
    return o instanceof Request r
        && arrivalMillis == r.arrivalMillis
        && maxOutputTokens == r.maxOutputTokens
        && Arrays.equals(prompt, r.prompt)
        && contextId.equals(r.contextId);
  }

  @Override
  public int hashCode() {
    return Objects.hash(arrivalMillis, maxOutputTokens, contextId) * 31 + Arrays.hashCode(prompt);
  }

  @Override
  public String toString() {
    return "Request[arrivalMillis=%d, promptLength=%d, maxOutputTokens=%d, contextId=%s]"
        .formatted(arrivalMillis, prompt.length, maxOutputTokens, contextId.orElse("-"));
  }
}
