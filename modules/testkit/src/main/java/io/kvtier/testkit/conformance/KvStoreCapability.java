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
   * damage is a counted miss and never data. A store that keeps no copy outside its own memory
   * ({@code memory}) cannot be damaged from outside and does not declare it.
   */
  DAMAGEABLE
}
