/**
 * Test-only wrapper providers that assert correct use of the pools and transfer engines (double
 * free, use after free, a copy from a freed page) and that inject faults (slow, stuck or failing
 * copies and L3 operations) by wrapping a delegate, plus {@link io.kvtier.asserting.Providers},
 * which finds a provider by name as the engine does. Depends on the SPI only and on no test
 * library, so that the simulator can run them; the provider {@code asserting} is a testing
 * provider, which {@code kvtier backends} lists only when asked for testing providers.
 */
module io.kvtier.asserting {
  requires transitive io.kvtier.spi;

  exports io.kvtier.asserting;

  // The asserting providers find their delegates, and Providers finds any provider, by SPI.
  uses io.kvtier.spi.DeviceMemoryProvider;
  uses io.kvtier.spi.HostMemoryProvider;
  uses io.kvtier.spi.CollectiveProvider;
  uses io.kvtier.spi.KvStoreProvider;

  provides io.kvtier.spi.DeviceMemoryProvider with
      io.kvtier.asserting.AssertingDeviceMemoryProvider;
  provides io.kvtier.spi.HostMemoryProvider with
      io.kvtier.asserting.AssertingHostMemoryProvider;
  // kvtier.store=faulty: an L3 store that drops, fails and slows its calls (soak tests).
  provides io.kvtier.spi.KvStoreProvider with
      io.kvtier.asserting.FaultyKvStoreProvider;
}
