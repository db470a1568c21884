package io.kvtier.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.AssertingDeviceMemoryProvider;
import io.kvtier.asserting.AssertingHostMemoryProvider;
import io.kvtier.asserting.FaultyKvStoreProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.TestingProvider;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.asserting: its three testing providers and one package. */
class AssertingModuleTest extends ModuleSuite {
  AssertingModuleTest() {
    super(AssertingDeviceMemoryProvider.class.getModule(), "io.kvtier.asserting");
    provides(DeviceMemoryProvider.class, AssertingDeviceMemoryProvider.class);
    provides(HostMemoryProvider.class, AssertingHostMemoryProvider.class);
    provides(KvStoreProvider.class, FaultyKvStoreProvider.class);
  }

  @Test
  void everyProviderIsMarkedAsATestingProvider() {
    // kvtier backends and the engine's start-up hints leave them out by this mark.
    assertThat(AssertingDeviceMemoryProvider.class.isAnnotationPresent(TestingProvider.class))
        .isTrue();
    assertThat(AssertingHostMemoryProvider.class.isAnnotationPresent(TestingProvider.class))
        .isTrue();
    assertThat(FaultyKvStoreProvider.class.isAnnotationPresent(TestingProvider.class)).isTrue();
  }
}
