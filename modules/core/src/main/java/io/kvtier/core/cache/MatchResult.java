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
 */
public record MatchResult(
    int[] deviceSlots,
    int deviceLength,
    int hostHitLength,
    RadixNode lastDeviceNode,
    RadixNode lastHostNode,
    List<LoadBack> pendingLoads) {

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
  }
}
