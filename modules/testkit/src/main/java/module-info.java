/**
 * Test support for kvtier and its backends: conformance suites for every SPI, asserting and
 * fault-injecting wrapper providers, workloads, and the deterministic multi-rank simulator.
 */
module io.kvtier.testkit {
  requires transitive io.kvtier.spi;
  requires transitive io.kvtier.core;
  requires transitive org.junit.jupiter.api;
  requires transitive org.junit.jupiter.params;
  requires transitive org.assertj.core;

  exports io.kvtier.testkit;
  exports io.kvtier.testkit.conformance;
  exports io.kvtier.testkit.asserting;
  exports io.kvtier.testkit.config;
  exports io.kvtier.testkit.workload;
  exports io.kvtier.testkit.sim;

  // The asserting providers find their delegates, and ModuleDescriptors checks providers, by SPI.
  uses io.kvtier.spi.DeviceMemoryProvider;
  uses io.kvtier.spi.HostMemoryProvider;
  uses io.kvtier.spi.CollectiveProvider;
  uses io.kvtier.spi.KvStoreProvider;

  provides io.kvtier.spi.DeviceMemoryProvider with
      io.kvtier.testkit.asserting.AssertingDeviceMemoryProvider;
  provides io.kvtier.spi.HostMemoryProvider with
      io.kvtier.testkit.asserting.AssertingHostMemoryProvider;
}
