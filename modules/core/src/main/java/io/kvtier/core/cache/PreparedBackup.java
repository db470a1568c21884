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

  /**
   * Reserved host slots, exactly the reservation: {@code hostSlots[i]} receives own page {@code
   * i} for {@code i < pages}; after them, {@code stateSlots} slots per covered snapshot, in the
   * order of {@link #statePositions}.
   */
  int[] hostSlots;

  /**
   * The recurrent-state snapshots this backup covers (HYBRID.md §5), ascending: the request's
   * interval positions in {@code (startToken, endToken]}, then its tail at {@code endToken} when
   * that is no interval position. Empty without snapshots.
   */
  int[] statePositions = NO_POSITIONS;

  /** The request's device slots of each covered snapshot, the copies' sources. */
  int[][] stateDevice = NO_STATES;

  /**
   * Whether the last covered snapshot is the request's tail: the runner rewrites the tail at
   * later steps, so it is never streamed; the attach copies it (all layers) in the same ack.
   */
  boolean tail;

  static final int[] NO_POSITIONS = new int[0];
  static final int[][] NO_STATES = new int[0][];

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

  /** Covered snapshots whose slots are streamed layer by layer (all but the tail). */
  int streamedStates() {
    return statePositions.length - (tail ? 1 : 0);
  }

  /** The host slots of covered snapshot {@code i}. */
  int[] hostState(int i, int slots) {
    int from = pages + i * slots;
    return java.util.Arrays.copyOfRange(hostSlots, from, from + slots);
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
