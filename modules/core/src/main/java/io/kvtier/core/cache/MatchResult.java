package io.kvtier.core.cache;

import java.util.List;
import java.util.Objects;

/**
 * What a prefix match found (CACHE.md §2).
 *
 * <p>The slot array belongs to the caller; the cache keeps no reference to it.
 *
 * @param deviceSlots device page slots of the device prefix, one per page, in token order
 * @param deviceLength tokens of the prefix whose pages are on the device
 * @param hostHitLength tokens after the device prefix whose pages are only on the host (L2 hit)
 * @param lastDeviceNode the deepest matched node on the device (a root if none)
 * @param lastHostNode the deepest matched node with a host copy past the device prefix, or {@code
 *     lastDeviceNode} if there is no host hit: the anchor for load-back and L3 prefetch
 * @param pendingLoads the loads still pending among the device prefix's nodes, in FIFO order:
 *     a caller must wait for their layers before reading those pages
 * @param usableLength tokens of the match a request can resume from (HYBRID.md §5): the matched
 *     length ({@code deviceLength + hostHitLength}) without recurrent-state snapshots; with
 *     them, the deepest matched node end that has a snapshot on the device or committed on the
 *     host, or 0
 */
public record MatchResult(
    int[] deviceSlots,
    int deviceLength,
    int hostHitLength,
    RadixNode lastDeviceNode,
    RadixNode lastHostNode,
    List<LoadBack> pendingLoads,
    int usableLength) {

  /**
   * A match whose usable length is the matched length (a model without recurrent state).
   *
   * @param deviceSlots device page slots of the device prefix
   * @param deviceLength tokens of the device prefix
   * @param hostHitLength tokens of the host hit past it
   * @param lastDeviceNode the deepest matched node on the device
   * @param lastHostNode the deepest matched node with a host copy
   * @param pendingLoads the loads still pending among the device prefix's nodes
   */
  public MatchResult(
      int[] deviceSlots,
      int deviceLength,
      int hostHitLength,
      RadixNode lastDeviceNode,
      RadixNode lastHostNode,
      List<LoadBack> pendingLoads) {
    this(
        deviceSlots,
        deviceLength,
        hostHitLength,
        lastDeviceNode,
        lastHostNode,
        pendingLoads,
        deviceLength + hostHitLength);
  }

  /**
   * The matched length: the device prefix and the host hit.
   *
   * @return tokens, a page multiple
   */
  public int matchedLength() {
    return deviceLength + hostHitLength;
  }

  /** Validates the fields. */
  public MatchResult {
    Objects.requireNonNull(deviceSlots, "deviceSlots");
    Objects.requireNonNull(lastDeviceNode, "lastDeviceNode");
    Objects.requireNonNull(lastHostNode, "lastHostNode");
    pendingLoads = List.copyOf(Objects.requireNonNull(pendingLoads, "pendingLoads"));
    if (deviceLength < 0 || hostHitLength < 0) {
      throw new IllegalArgumentException(
          "deviceLength=" + deviceLength + " and hostHitLength=" + hostHitLength + " must be >= 0");
    }
    if (usableLength < 0 || usableLength > deviceLength + hostHitLength) {
      throw new IllegalArgumentException(
          "usableLength="
              + usableLength
              + " must be within the matched length "
              + (deviceLength + hostHitLength));
    }
  }
}
