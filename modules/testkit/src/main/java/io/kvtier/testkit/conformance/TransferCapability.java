package io.kvtier.testkit.conformance;

/**
 * What a device provider lets {@link DeviceMemoryConformanceSuite} control or use. A suite
 * subclass declares the capabilities its provider has; checks that need an undeclared one are
 * skipped with a printed reason, and checks of the documented failure for an undeclared one run
 * instead.
 */
public enum TransferCapability {
  /**
   * Copies complete in the time of the context's {@link io.kvtier.spi.TimeSource}, which {@link
   * TransferControl#advance} moves; without advancing, no copy completes.
   */
  VIRTUAL_TIME,
  /** {@link TransferControl#stall} and {@link TransferControl#release} hold back completions. */
  STALL_INJECTION,
  /** {@link TransferControl#failNext} makes the next batch of a direction fail. */
  FAULT_INJECTION,
  /**
   * The device copies to and from a host pool of any provider. Without it, {@link
   * io.kvtier.spi.DeviceMemory#transferEngine} must reject a host pool of another provider with
   * {@link IllegalArgumentException} naming the requirement.
   */
  FOREIGN_HOST
}
