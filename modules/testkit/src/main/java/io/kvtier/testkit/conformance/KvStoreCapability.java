package io.kvtier.testkit.conformance;

/**
 * What an L3 store does beyond the common contract; see {@link KvStoreSuiteBase#capabilities()}.
 * The suite checks each declared capability, and for each one not declared that the store does
 * not do it either.
 */
public enum KvStoreCapability {
  /**
   * Pages outlive the store that stored them: a store opened after it was closed, with the same
   * spec and context, finds them ({@code file}; {@code hazelcast} while its cluster lives).
   * Without it, such a store starts empty.
   */
  PERSISTENT,
  /**
   * Stores open at the same time with the same spec and context see each other's pages: what
   * replicated KV with one elected writer per group needs ({@code file} on one directory, {@code
   * hazelcast}). Without it, each store sees only its own pages.
   */
  SHARED,
  /**
   * The suite can damage a stored page through {@link KvStoreSuiteBase#damage}, to check that
   * damage is a counted miss and never data ({@code file}, {@code hazelcast}; {@code memory}
   * through its {@link io.kvtier.spi.DamageableKvStore} hook, for the damage a segment of fixed
   * size can take: a flipped bit, a removed page).
   */
  DAMAGEABLE
}
