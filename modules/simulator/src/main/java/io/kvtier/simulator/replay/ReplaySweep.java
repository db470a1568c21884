package io.kvtier.simulator.replay;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;

/**
 * The configurations of a sweep: every combination of the values of each axis, in the order
 * page size, device capacity, host capacity, L3 capacity, eviction, write policy, snapshot
 * interval (the last varies fastest). The host capacity is given in tokens or as a ratio of the
 * device capacity.
 *
 * @param pageSizes tokens per page
 * @param deviceTokens device capacities in tokens, each at least one page of every page size
 * @param hostTokens host capacities in tokens (0: no host tier); empty when {@code hostRatios}
 *     is given
 * @param hostRatios host capacities as multiples of the device capacity (0: no host tier);
 *     empty when {@code hostTokens} is given
 * @param l3Tokens L3 capacities in tokens (0: no L3 tier)
 * @param evictions eviction policies
 * @param writePolicies write policies
 * @param snapshotSlots page slots of one recurrent-state snapshot, 0 for a model without
 *     recurrent layers (then {@code snapshotIntervals} is not swept and must hold one value)
 * @param snapshotIntervals pages between two interval snapshots, each at least 1
 */
public record ReplaySweep(
    List<Integer> pageSizes,
    List<Long> deviceTokens,
    List<Long> hostTokens,
    List<Double> hostRatios,
    List<Long> l3Tokens,
    List<EvictionPolicy> evictions,
    List<WritePolicy> writePolicies,
    int snapshotSlots,
    List<Integer> snapshotIntervals) {

  /**
   * A sweep without recurrent-state snapshots.
   *
   * @param pageSizes tokens per page
   * @param deviceTokens device capacities in tokens
   * @param hostTokens host capacities in tokens, or empty
   * @param hostRatios host capacities as multiples of the device capacity, or empty
   * @param l3Tokens L3 capacities in tokens
   * @param evictions eviction policies
   * @param writePolicies write policies
   */
  public ReplaySweep(
      List<Integer> pageSizes,
      List<Long> deviceTokens,
      List<Long> hostTokens,
      List<Double> hostRatios,
      List<Long> l3Tokens,
      List<EvictionPolicy> evictions,
      List<WritePolicy> writePolicies) {
    this(
        pageSizes,
        deviceTokens,
        hostTokens,
        hostRatios,
        l3Tokens,
        evictions,
        writePolicies,
        0,
        List.of(ReplayConfiguration.DEFAULT_SNAPSHOT_INTERVAL_PAGES));
  }

  /** Copies the lists and checks that each axis has a value and the host axis exactly one form. */
  public ReplaySweep {
    pageSizes = distinct("pageSizes", pageSizes);
    deviceTokens = distinct("deviceTokens", deviceTokens);
    hostTokens = List.copyOf(new LinkedHashSet<>(Objects.requireNonNull(hostTokens, "hostTokens")));
    hostRatios = List.copyOf(new LinkedHashSet<>(Objects.requireNonNull(hostRatios, "hostRatios")));
    l3Tokens = distinct("l3Tokens", l3Tokens);
    evictions = distinct("evictions", evictions);
    writePolicies = distinct("writePolicies", writePolicies);
    snapshotIntervals = distinct("snapshotIntervals", snapshotIntervals);
    if (snapshotSlots < 0) {
      throw new IllegalArgumentException("snapshotSlots=" + snapshotSlots + " must be >= 0");
    }
    for (int k : snapshotIntervals) {
      if (k < 1) {
        throw new IllegalArgumentException("snapshot interval " + k + " must be >= 1 page");
      }
    }
    if (snapshotSlots == 0 && snapshotIntervals.size() > 1) {
      throw new IllegalArgumentException(
          "snapshot intervals "
              + snapshotIntervals
              + " without snapshots (snapshotSlots=0): a model without recurrent layers takes"
              + " none, so there is nothing to sweep");
    }
    if (hostTokens.isEmpty() == hostRatios.isEmpty()) {
      throw new IllegalArgumentException(
          hostTokens.isEmpty()
              ? "no host capacity: give it in tokens or as a ratio of the device capacity (0 for"
                  + " no host tier)"
              : "give the host capacity in tokens or as a ratio of the device capacity, not both");
    }
    for (double r : hostRatios) {
      if (!(r >= 0) || Double.isInfinite(r)) {
        throw new IllegalArgumentException("host ratio " + r + " must be a number >= 0");
      }
    }
  }

  private static <T> List<T> distinct(String name, List<T> values) {
    Objects.requireNonNull(values, name);
    if (values.isEmpty()) {
      throw new IllegalArgumentException(name + " is empty: give at least one value");
    }
    return List.copyOf(new LinkedHashSet<>(values));
  }

  /**
   * Every combination, capacities rounded down to whole pages of their page size.
   *
   * @return the configurations, in the order of the axes
   * @throws IllegalArgumentException if a combination is not a valid configuration (a device
   *     below one page, write-back or L3 without a host tier), naming it
   */
  public List<ReplayConfiguration> configurations() {
    List<ReplayConfiguration> all = new ArrayList<>();
    for (int page : pageSizes) {
      for (long device : deviceTokens) {
        if (device < page) {
          throw new IllegalArgumentException(
              "device capacity of "
                  + device
                  + " tokens is less than one page of "
                  + page
                  + " tokens: give at least one page");
        }
        List<Long> hosts = new ArrayList<>(hostTokens);
        for (double r : hostRatios) {
          hosts.add((long) Math.floor(r * device));
        }
        for (long host : hosts) {
          for (long l3 : l3Tokens) {
            for (EvictionPolicy eviction : evictions) {
              for (WritePolicy write : writePolicies) {
                ReplayConfiguration c =
                    ReplayConfiguration.of(page, device, host, l3, eviction, write);
                if (snapshotSlots == 0) {
                  all.add(c);
                  continue;
                }
                for (int k : snapshotIntervals) {
                  all.add(c.withSnapshots(snapshotSlots, k));
                }
              }
            }
          }
        }
      }
    }
    return all;
  }
}
