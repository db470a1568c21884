package io.kvtier.testkit.conformance;

/**
 * What a collective provider supports beyond the common contract; see {@link
 * CollectiveConformanceSuite#capabilities()}.
 */
public enum CollectiveCapability {
  /**
   * World size and rank may be left empty in the spec, to be filled from a launcher (MPI).
   * Without it, {@link io.kvtier.spi.CollectiveProvider#join} must reject such a spec with {@link
   * IllegalArgumentException}.
   */
  LAUNCHER_ASSIGNED_RANKS
}
