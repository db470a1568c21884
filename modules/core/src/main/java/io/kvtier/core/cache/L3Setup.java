package io.kvtier.core.cache;

import io.kvtier.core.config.L3Config;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.TimeSource;
import java.util.Objects;

/**
 * What a rank's cache needs for an L3 tier: the settings, this rank's store handle, where the
 * store calls run, the clock the prefetch timeouts read, and the rank's place in its group (for
 * the key salt). The caller owns the store and the executor and closes them after the cache's
 * last use: the executor first, then the store.
 *
 * @param config the settings, equal on every rank
 * @param store this rank's store
 * @param executor where this rank's store calls run
 * @param time this rank's clock; only prefetch timeouts read it, and their outcome is agreed
 *     across ranks (MAX) before it decides anything
 * @param rank this rank, {@code 0 <= rank < worldSize}
 * @param worldSize ranks in the group
 */
public record L3Setup(
    L3Config config, KvStore store, L3Executor executor, TimeSource time, int rank, int worldSize) {

  /** Validates the fields. */
  public L3Setup {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(store, "store");
    Objects.requireNonNull(executor, "executor");
    Objects.requireNonNull(time, "time");
    if (worldSize < 1 || rank < 0 || rank >= worldSize) {
      throw new IllegalArgumentException(
          "rank=" + rank + " worldSize=" + worldSize + ": need 0 <= rank < worldSize");
    }
  }

  /**
   * Whether this rank writes to the store: every rank for sharded KV, rank 0 for replicated KV.
   *
   * @return true if this rank's backups are put
   */
  public boolean writer() {
    return !config.replicatedKv() || rank == 0;
  }
}
