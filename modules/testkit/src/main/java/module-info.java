/**
 * Test support for kvtier's providers and engine: conformance suites for every SPI, the master
 * seed of randomized tests ({@code -Dkvtier.tests.seed}) and module-descriptor checks. It
 * depends on the SPI only (and on the SPI-only asserting wrappers, which it passes on), so that
 * every provider module can run its conformance subclass with it in test scope.
 */
module io.kvtier.testkit {
  requires transitive io.kvtier.spi;
  requires transitive io.kvtier.asserting;
  requires transitive org.junit.jupiter.api;
  requires transitive org.junit.jupiter.params;
  requires transitive org.assertj.core;

  exports io.kvtier.testkit;
  exports io.kvtier.testkit.conformance;
  exports io.kvtier.testkit.config;

  // ModuleDescriptors checks providers by SPI.
  uses io.kvtier.spi.DeviceMemoryProvider;
  uses io.kvtier.spi.HostMemoryProvider;
  uses io.kvtier.spi.CollectiveProvider;
  uses io.kvtier.spi.KvStoreProvider;
}
