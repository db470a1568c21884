package io.kvtier.core.cache;

/**
 * A request's prepared backup (CACHE.md §11), replicated state only: which of the request's
 * own pages it covers, the host slots reserved for them, and which layers have been streamed.
 * The streamed copies themselves are rank-local and live in {@link LocalProgress}.
 *
 * <p>It covers the request's own pages {@code [0, pages)}, that is the tokens {@code
 * [startToken, startToken + pages * pageSize)}, where {@code startToken} is the request's
 * locked prefix length (which does not move while a backup exists: a chunk insert that reaches
 * the backup resolves it).
 */
final class PreparedBackup {
  final long requestId;
  final int startToken;
  final int layers;
  int pages;

  /** Reserved host slots; {@code hostSlots[i]} receives own page {@code i}. */
  int[] hostSlots;

  /**
   * The device slots the streamed copies read, held in the allocator from the first stream until
   * the commit of the ack that carries the copies; null before the first stream.
   */
  int[] heldDeviceSlots;

  private final boolean[] streamed;
  int streamedCount;

  PreparedBackup(long requestId, int startToken, int layers, int pages, int[] hostSlots) {
    this.requestId = requestId;
    this.startToken = startToken;
    this.layers = layers;
    this.pages = pages;
    this.hostSlots = hostSlots;
    this.streamed = new boolean[layers];
  }

  int endToken(int pageSize) {
    return startToken + pages * pageSize;
  }

  boolean streamed(int layer) {
    return streamed[layer];
  }

  void markStreamed(int layer) {
    streamed[layer] = true;
    streamedCount++;
  }

  String streamedLayers() {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < layers; i++) {
      if (streamed[i]) {
        sb.append(sb.length() > 1 ? ", " : "").append(i);
      }
    }
    return sb.append(']').toString();
  }
}
