package io.kvtier.core.rank;

import java.util.List;
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
 * @param resumeSlots on a request's first step with {@code from > 0}: the device page slots that
 *     hold the recurrent state after positions {@code [0, from)} (HYBRID.md §5), from which the
 *     runner loads its state; empty otherwise, and always for a model without recurrent state
 *     ({@link ModelRunner#snapshotSlots()} 0)
 * @param snapshots the snapshots this step takes, in position order: for each, once a recurrent
 *     layer has taken in position {@code position - 1}, the runner writes that layer's state
 *     into its block of the snapshot's slots; every position is in {@code (from, to]}
 * @param sampling how the request's next tokens are chosen ({@link Sampler}): the token at
 *     position {@code p} is {@code Sampler.choose(logits, .., sampling, p)}; {@link
 *     Sampling#GREEDY} unless the request asked otherwise (only of a model that {@link
 *     ModelRunner#samples()})
 * @param logprobs where the log-probabilities of the chosen tokens go, for a request that asked
 *     ({@link Sampling#logprobs()}); {@link TokenLogprobs#NONE} otherwise. {@link
 *     Sampler#choose(float[], int, int, ModelStep, int)} records into it; it belongs to the engine
 *     and, unlike the arrays, keeps what is recorded
 * @param promptLength how many of {@code tokens} are the prompt (the rest were generated), which
 *     {@link Penalties} tell apart; {@code to} where a caller does not say
 */
public record ModelStep(
    long requestId,
    long namespace,
    int[] tokens,
    int from,
    int to,
    int[] pageTable,
    int[] resumeSlots,
    List<Snapshot> snapshots,
    Sampling sampling,
    TokenLogprobs logprobs,
    int promptLength) {

  private static final int[] NONE = new int[0];

  /**
   * A step whose tokens up to {@code to} all count as its prompt.
   *
   * @param requestId the request
   * @param namespace the request's cache namespace
   * @param tokens the request's known tokens
   * @param from the first token this step computes
   * @param to one past the last one
   * @param pageTable the request's device page slots
   * @param resumeSlots the slots of the recurrent state it resumes from, or none
   * @param snapshots the snapshots it takes
   * @param sampling how its next tokens are chosen
   * @param logprobs where its tokens' log-probabilities go
   */
  public ModelStep(
      long requestId,
      long namespace,
      int[] tokens,
      int from,
      int to,
      int[] pageTable,
      int[] resumeSlots,
      List<Snapshot> snapshots,
      Sampling sampling,
      TokenLogprobs logprobs) {
    this(
        requestId,
        namespace,
        tokens,
        from,
        to,
        pageTable,
        resumeSlots,
        snapshots,
        sampling,
        logprobs,
        to);
  }

  /**
   * A step whose request reports nothing of its tokens.
   *
   * @param requestId the request
   * @param namespace the request's cache namespace
   * @param tokens the request's known tokens
   * @param from the first token this step computes
   * @param to one past the last one
   * @param pageTable the request's device page slots
   * @param resumeSlots the slots of the recurrent state it resumes from, or none
   * @param snapshots the snapshots it takes
   * @param sampling how its next tokens are chosen
   */
  public ModelStep(
      long requestId,
      long namespace,
      int[] tokens,
      int from,
      int to,
      int[] pageTable,
      int[] resumeSlots,
      List<Snapshot> snapshots,
      Sampling sampling) {
    this(
        requestId,
        namespace,
        tokens,
        from,
        to,
        pageTable,
        resumeSlots,
        snapshots,
        sampling,
        TokenLogprobs.NONE);
  }

  /**
   * A step of a greedy request.
   *
   * @param requestId the request
   * @param namespace the request's cache namespace
   * @param tokens the request's known tokens
   * @param from the first token this step computes
   * @param to one past the last one
   * @param pageTable the request's device page slots
   * @param resumeSlots the slots of the recurrent state it resumes from, or none
   * @param snapshots the snapshots it takes
   */
  public ModelStep(
      long requestId,
      long namespace,
      int[] tokens,
      int from,
      int to,
      int[] pageTable,
      int[] resumeSlots,
      List<Snapshot> snapshots) {
    this(
        requestId, namespace, tokens, from, to, pageTable, resumeSlots, snapshots, Sampling.GREEDY);
  }

  /**
   * A snapshot of the recurrent state after positions {@code [0, position)}.
   *
   * @param position the snapshot's position, a page multiple
   * @param slots the device page slots the state goes to ({@link ModelRunner#snapshotSlots()} of
   *     them); layer {@code l}'s state goes into layer {@code l}'s blocks
   */
  public record Snapshot(int position, int[] slots) {

    /** Validates the fields. */
    public Snapshot {
      Objects.requireNonNull(slots, "slots");
      if (position <= 0 || slots.length == 0) {
        throw new IllegalArgumentException(
            "snapshot at position " + position + " with " + slots.length + " slots");
      }
    }
  }

  /**
   * A step that neither resumes nor takes a recurrent-state snapshot.
   *
   * @param requestId the request
   * @param namespace the request's cache namespace
   * @param tokens the request's known tokens
   * @param from the first token this step computes
   * @param to one past the last one
   * @param pageTable the request's device page slots
   */
  public ModelStep(
      long requestId, long namespace, int[] tokens, int from, int to, int[] pageTable) {
    this(requestId, namespace, tokens, from, to, pageTable, NONE, List.of(), Sampling.GREEDY);
  }

  /**
   * A step that neither resumes nor takes a recurrent-state snapshot, of a request sampled as
   * {@code sampling} says.
   *
   * @param requestId the request
   * @param namespace the request's cache namespace
   * @param tokens the request's known tokens
   * @param from the first token this step computes
   * @param to one past the last one
   * @param pageTable the request's device page slots
   * @param sampling how its next tokens are chosen
   */
  public ModelStep(
      long requestId,
      long namespace,
      int[] tokens,
      int from,
      int to,
      int[] pageTable,
      Sampling sampling) {
    this(requestId, namespace, tokens, from, to, pageTable, NONE, List.of(), sampling);
  }

  /** Validates the range. */
  public ModelStep {
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(pageTable, "pageTable");
    Objects.requireNonNull(resumeSlots, "resumeSlots");
    Objects.requireNonNull(snapshots, "snapshots");
    Objects.requireNonNull(sampling, "sampling");
    Objects.requireNonNull(logprobs, "logprobs");
    if (promptLength < 0 || promptLength > tokens.length) {
      throw new IllegalArgumentException(
          "request id="
              + requestId
              + ": promptLength="
              + promptLength
              + " is not within the "
              + tokens.length
              + " tokens");
    }
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
    for (Snapshot snapshot : snapshots) {
      if (snapshot.position() <= from || snapshot.position() > to) {
        throw new IllegalArgumentException(
            "request id="
                + requestId
                + ": snapshot at "
                + snapshot.position()
                + " is not within ("
                + from
                + ", "
                + to
                + "]");
      }
    }
  }
}
