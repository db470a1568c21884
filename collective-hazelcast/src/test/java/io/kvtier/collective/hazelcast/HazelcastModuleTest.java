package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.testkit.ModuleDescriptors;
import java.lang.module.ModuleDescriptor;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The module's descriptor: providers declared twice alike, exports as intended, names. */
class HazelcastModuleTest {

  private static final Module MODULE = HazelcastCollectiveProvider.class.getModule();

  @Test
  void providesMatchServiceFiles() {
    ModuleDescriptors.assertProvidesMatchServiceFiles(MODULE);
  }

  @Test
  void exportsOnlyItsApiPackage() {
    ModuleDescriptors.assertExports(MODULE, Set.of("io.kvtier.collective.hazelcast"));
  }

  @Test
  void providersCarryTheirNames() {
    ModuleDescriptors.assertProviderNames(MODULE);
  }

  @Test
  void providesTheCollectiveAndTheStore() {
    ModuleDescriptor descriptor = ModuleDescriptors.descriptorOf(MODULE);
    assertThat(descriptor.name()).isEqualTo("io.kvtier.collective.hazelcast");
    assertThat(descriptor.provides().stream()
            .collect(Collectors.toMap(ModuleDescriptor.Provides::service,
                ModuleDescriptor.Provides::providers)))
        .containsOnlyKeys(CollectiveProvider.class.getName(), KvStoreProvider.class.getName())
        .containsEntry(CollectiveProvider.class.getName(),
            java.util.List.of(HazelcastCollectiveProvider.class.getName()))
        .containsEntry(KvStoreProvider.class.getName(),
            java.util.List.of(HazelcastKvStoreProvider.class.getName()));
  }

  @Test
  void bothProvidersAreAvailableWithHazelcast540() {
    assertThat(new HazelcastCollectiveProvider().availability().available()).isTrue();
    assertThat(new HazelcastKvStoreProvider().availability().reason()).contains("5.4.0");
  }
}
