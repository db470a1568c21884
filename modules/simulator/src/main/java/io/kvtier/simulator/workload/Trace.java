package io.kvtier.simulator.workload;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * An immutable sequence of prompts (token-id arrays) in request order, stored compactly: all
 * tokens in one array and the start of each prompt in another. The fixed traces hold 2.2 million
 * tokens, which as one array per request would cost a header and a copy per prompt for nothing.
 */
public final class Trace {

  private final int[] tokens;
  // offsets[i] is where prompt i starts; offsets[size] == tokens.length
  private final int[] offsets;

  private Trace(int[] tokens, int[] offsets) {
    this.tokens = tokens;
    this.offsets = offsets;
  }

  /**
   * A trace of copies of the given prompts.
   *
   * @param prompts the prompts in request order, each at least one token long
   * @return the trace
   */
  public static Trace of(List<int[]> prompts) {
    Objects.requireNonNull(prompts, "prompts");
    long total = 0;
    for (int[] p : prompts) {
      total += Objects.requireNonNull(p, "a prompt of prompts").length;
    }
    Builder b = builder(prompts.size(), total);
    for (int[] p : prompts) {
      b.add(p, 0, p.length);
    }
    return b.build();
  }

  /**
   * A builder that appends prompts one by one.
   *
   * @param expectedRequests a capacity hint, at least 0
   * @param expectedTokens a capacity hint, at least 0
   * @return the builder
   */
  public static Builder builder(int expectedRequests, long expectedTokens) {
    return new Builder(expectedRequests, expectedTokens);
  }

  /**
   * The number of prompts.
   *
   * @return the request count
   */
  public int size() {
    return offsets.length - 1;
  }

  /**
   * The total number of tokens over all prompts.
   *
   * @return the token count
   */
  public long totalTokens() {
    return tokens.length;
  }

  /**
   * The length of one prompt.
   *
   * @param request the prompt's index, in {@code [0, size())}
   * @return its token count
   */
  public int promptLength(int request) {
    Objects.checkIndex(request, size());
    return offsets[request + 1] - offsets[request];
  }

  /**
   * A copy of one prompt.
   *
   * @param request the prompt's index, in {@code [0, size())}
   * @return a new array of its tokens
   */
  public int[] prompt(int request) {
    Objects.checkIndex(request, size());
    return Arrays.copyOfRange(tokens, offsets[request], offsets[request + 1]);
  }

  /**
   * Copies of all prompts, for a benchmark that must not pay for the copy inside its loop.
   *
   * @return a new array of new arrays
   */
  public int[][] prompts() {
    int[][] out = new int[size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = prompt(i);
    }
    return out;
  }

  /**
   * The prompts as requests that all arrive at time 0, in trace order, without a context id.
   *
   * @param maxOutputTokens the output budget of every request, at least 0
   * @return a stream of new requests
   */
  public Stream<Request> requests(int maxOutputTokens) {
    return IntStream.range(0, size())
        .mapToObj(i -> new Request(0, prompt(i), maxOutputTokens, Optional.empty()));
  }

  /** Two traces are equal when they hold the same prompts in the same order. */
  @Override
  public boolean equals(Object o) {
    return o instanceof Trace t
        && Arrays.equals(offsets, t.offsets)
        && Arrays.equals(tokens, t.tokens);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(offsets) + Arrays.hashCode(tokens);
  }

  @Override
  public String toString() {
    return "Trace[requests=" + size() + ", tokens=" + totalTokens() + "]";
  }

  /** Appends prompts to a new {@link Trace}; not thread-safe, usable once. */
  public static final class Builder {

    private int[] tokens;
    private int[] offsets;
    private int requests;
    private int used;
    private boolean built;

    private Builder(int expectedRequests, long expectedTokens) {
      if (expectedRequests < 0 || expectedTokens < 0) {
        throw new IllegalArgumentException(
            "expectedRequests=%d expectedTokens=%d must both be >= 0"
                .formatted(expectedRequests, expectedTokens));
      }
      tokens = new int[(int) Math.min(expectedTokens, Integer.MAX_VALUE - 8)];
      offsets = new int[expectedRequests + 1];
    }

    /**
     * Appends {@code src[from, from + length)} as the next prompt.
     *
     * @param src the tokens
     * @param from the first token to copy
     * @param length the prompt length, at least 1
     * @return this builder
     */
    public Builder add(int[] src, int from, int length) {
      Objects.requireNonNull(src, "src");
      Objects.checkFromIndexSize(from, length, src.length);
      if (built) {
        throw new IllegalStateException("build() was already called: use a new builder");
      }
      if (length == 0) {
        throw new IllegalArgumentException(
            "prompt " + requests + " is empty: every prompt needs at least one token");
      }
      int newUsed;
      try {
        newUsed = Math.addExact(used, length);
      } catch (ArithmeticException e) {
        throw new IllegalArgumentException(
            "trace exceeds " + Integer.MAX_VALUE + " tokens at prompt " + requests, e);
      }
      if (newUsed > tokens.length) {
        long grown = Math.max(newUsed, 2L * tokens.length);
        tokens = Arrays.copyOf(tokens, (int) Math.min(grown, Integer.MAX_VALUE - 8));
      }
      if (requests + 2 > offsets.length) {
        offsets = Arrays.copyOf(offsets, Math.max(requests + 2, 2 * offsets.length));
      }
      System.arraycopy(src, from, tokens, used, length);
      used = newUsed;
      offsets[++requests] = used;
      return this;
    }

    /**
     * The trace of the prompts added so far.
     *
     * @return the trace
     */
    public Trace build() {
      if (built) {
        throw new IllegalStateException("build() was already called: use a new builder");
      }
      built = true;
      int[] t = used == tokens.length ? tokens : Arrays.copyOf(tokens, used);
      int[] o = requests + 1 == offsets.length ? offsets : Arrays.copyOf(offsets, requests + 1);
      return new Trace(t, o);
    }
  }
}
