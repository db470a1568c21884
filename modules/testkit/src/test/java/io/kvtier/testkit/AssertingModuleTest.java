package io.kvtier.testkit;

import io.kvtier.asserting.AssertingDeviceMemoryProvider;
import io.kvtier.asserting.AssertingHostMemoryProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;

/** The descriptor of io.kvtier.asserting: its two testing providers and one package. */
class AssertingModuleTest extends ModuleSuite {
  AssertingModuleTest() {
    super(AssertingDeviceMemoryProvider.class.getModule(), "io.kvtier.asserting");
    provides(DeviceMemoryProvider.class, AssertingDeviceMemoryProvider.class);
    provides(HostMemoryProvider.class, AssertingHostMemoryProvider.class);
  }
}
