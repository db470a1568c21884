package io.kvtier.core.cache;

import java.util.List;
import java.util.Objects;

/**
 * The outcome of admitting a request: its matched prefix, now locked until the request finishes
 * or aborts, and the load-back started for it, if any.
 *
 * <p>The device slots of the prefix are not copied here, since a copy per request would cost more
 * than the match itself: read them into the request's page-table row with {@link
 * RankCache#copyPageTable(long, int[], int)}, or get a new array from {@link
 * RankCache#pageTable(long)}.
 *
 * @param requestId the request
 * @param devicePrefixLength tokens of the locked prefix (a page multiple); the request computes
 *     the KV of the tokens after it
 * @param hostHitLength tokens found only on the host at match time (loaded or not)
 * @param loadedLength tokens of the host hit that this admission is loading back: either 0 or
 *     {@code hostHitLength}, since a load-back is all or nothing
 * @param pendingLoads every load still pending that the prefix's pages come from (this
 *     admission's and earlier ones), in FIFO order: before the model reads layer {@code i}, wait
 *     for layer {@code i} of each with {@link RankCache#awaitLoadLayer}. On several ranks a copy
 *     that failed here must not make this rank alone abort the request (the ranks would
 *     diverge): wait for the load's commit ({@link LoadBack#isCommitted()}) and abort the request
 *     on every rank iff {@link LoadBack#failed()}, which the agreed commit sets alike everywhere
 *     (as {@code io.kvtier.core.rank.RunningRequest} does); a single rank may abort at once
 * @param lastDeviceNode the deepest node of the locked prefix
 * @param lastHostNode the anchor of the host hit at match time
 * @param matchedLength tokens the match found, on the device and on the host
 * @param usableLength tokens of the match the request can resume from (HYBRID.md §5): the
 *     matched length without recurrent-state snapshots; with them, the deepest matched node end
 *     with a snapshot on the device or committed on the host (loaded back with the chain), or 0;
 *     what a server reports as cached
 */
public record Admission(
    long requestId,
    int devicePrefixLength,
    int hostHitLength,
    int loadedLength,
    List<LoadBack> pendingLoads,
    RadixNode lastDeviceNode,
    RadixNode lastHostNode,
    int matchedLength,
    int usableLength) {

  /**
   * An admission whose usable length is its matched length (a model without recurrent state).
   *
   * @param requestId the request
   * @param devicePrefixLength tokens of the locked prefix
   * @param hostHitLength tokens found only on the host at match time
   * @param loadedLength tokens of the host hit loaded back
   * @param pendingLoads the loads the prefix's pages come from
   * @param lastDeviceNode the deepest node of the locked prefix
   * @param lastHostNode the anchor of the host hit at match time
   */
  public Admission(
      long requestId,
      int devicePrefixLength,
      int hostHitLength,
      int loadedLength,
      List<LoadBack> pendingLoads,
      RadixNode lastDeviceNode,
      RadixNode lastHostNode) {
    this(
        requestId,
        devicePrefixLength,
        hostHitLength,
        loadedLength,
        pendingLoads,
        lastDeviceNode,
        lastHostNode,
        devicePrefixLength + hostHitLength - loadedLength,
        devicePrefixLength + hostHitLength - loadedLength);
  }

  /** Validates the fields. */
  public Admission {
    pendingLoads = List.copyOf(Objects.requireNonNull(pendingLoads, "pendingLoads"));
    Objects.requireNonNull(lastDeviceNode, "lastDeviceNode");
    Objects.requireNonNull(lastHostNode, "lastHostNode");
    if (devicePrefixLength < 0
        || hostHitLength < 0
        || loadedLength < 0
        || loadedLength > hostHitLength) {
      throw new IllegalArgumentException(
          "inconsistent lengths: devicePrefixLength="
              + devicePrefixLength
              + " hostHitLength="
              + hostHitLength
              + " loadedLength="
              + loadedLength);
    }
    if (usableLength < 0 || usableLength > matchedLength) {
      throw new IllegalArgumentException(
          "usableLength=" + usableLength + " must be within matchedLength=" + matchedLength);
    }
  }
}
