package io.kvtier.core.rank;

import io.kvtier.core.cache.Admission;
import io.kvtier.core.cache.LoadBack;
import io.kvtier.core.cache.RankCache;
import java.util.List;

/**
 * A running request's replicated progress: how many tokens have KV, how many were generated, and
 * the load-backs it waits for. Mutated by the scheduler only, at replicated points.
 */
final class RunningRequest {
  final RankRequest request;
  final long id;
  final int promptLength;

  /** Tokens whose KV the request computes: the prompt and each generated token but the last. */
  final int kvTarget;

  /**
   * The prompt followed by the generated tokens: the one array of the request on this rank, from
   * admission ({@code tokens[0, promptLength - 1)} or the whole prompt) to finish ({@code
   * tokens[0, computed)}), so that the cache's finish sees the array it admitted and takes its
   * fast path. Its own, not the request's: the output is written into it.
   */
  final int[] tokens;

  final int prefixLength;
  final int hostLoadedLength;

  /** The admission's matched length (device and host) and host hit; usable = prefixLength. */
  final int matchedLength;

  final int hostHitLength;
  final List<LoadBack> pendingLoads;
  final boolean verifyOnStart;

  /** Where the model leaves its tokens' log-probabilities, if the request asked for them. */
  final TokenLogprobs logprobs;

  /** The hit tokens the admission counted (device, host, L3): taken back on a requeue. */
  int countedDeviceHits;

  int countedHostHits;
  int countedL3Hits;

  /** The transfer pages this admission counted ({@link TransferStats}), taken back on requeue. */
  int countedTransferFetched;

  int countedTransferRecomputed;
  boolean prepared;
  boolean started;
  int computed;
  int generated;

  /** A rank's token array for a request: its prompt, then room for its output. */
  static int[] tokenArray(RankRequest request) {
    int[] tokens = new int[request.promptLength() + request.maxOutputTokens()];
    System.arraycopy(request.promptArray(), 0, tokens, 0, request.promptLength());
    return tokens;
  }

  RunningRequest(RankRequest request, int[] tokens, Admission admission, int kvTarget) {
    this.logprobs = TokenLogprobs.of(request.sampling().logprobs());
    this.request = request;
    this.id = request.id();
    this.promptLength = request.promptLength();
    this.kvTarget = kvTarget;
    this.tokens = tokens;
    this.prefixLength = admission.devicePrefixLength();
    this.hostLoadedLength = admission.loadedLength();
    this.matchedLength = admission.matchedLength();
    this.hostHitLength = admission.hostHitLength();
    this.pendingLoads = admission.pendingLoads();
    // Pages that came from the host are checked once their loads commit; device hits are the
    // same bytes the request would have computed, so checking them would only cost time.
    this.verifyOnStart = !pendingLoads.isEmpty();
    this.computed = prefixLength;
  }

  /** Replicated: every load the prefix comes from has committed. */
  boolean loadsCommitted() {
    for (LoadBack load : pendingLoads) {
      if (!load.isCommitted()) {
        return false;
      }
    }
    return true;
  }

  /** Replicated: some load the prefix comes from committed as failed. */
  boolean loadFailed() {
    for (LoadBack load : pendingLoads) {
      if (load.isCommitted() && load.failed()) {
        return true;
      }
    }
    return false;
  }

  /** Rank-local: every layer of every pending load has finished copying on this rank. */
  boolean loadsCopiedLocally(RankCache cache) {
    for (LoadBack load : pendingLoads) {
      for (int layer = 0; layer < load.layers(); layer++) {
        if (!cache.isLoadLayerReady(load, layer)) {
          return false;
        }
      }
    }
    return true;
  }

  boolean inPrefill() {
    return computed < promptLength;
  }

  boolean done() {
    return computed >= kvTarget && generated == request.maxOutputTokens();
  }

  @Override
  public String toString() {
    return "RunningRequest[id="
        + id
        + ", computed="
        + computed
        + "/"
        + kvTarget
        + ", generated="
        + generated
        + "/"
        + request.maxOutputTokens()
        + (started ? "" : ", not started")
        + "]";
  }
}
