package io.kvtier.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.store.file.FileKvStoreProvider;
import io.kvtier.testkit.ModuleDescriptors;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The module checks of io.kvtier.store: provides, service files, names and exports. */
class StoreModuleTest {

  private static final Module STORE = MemoryKvStoreProvider.class.getModule();

  @Test
  void providesWhatItsServiceFilesListUnderTheirNames() {
    assertThat(STORE.getName()).isEqualTo("io.kvtier.store");
    ModuleDescriptors.assertProvidesMatchServiceFiles(STORE);
    ModuleDescriptors.assertProviderNames(STORE);
    assertThat(ModuleDescriptors.serviceFileLines(STORE, KvStoreProvider.class.getName()))
        .containsExactly(MemoryKvStoreProvider.class.getName(),
            FileKvStoreProvider.class.getName());
  }

  @Test
  void exportsItsTwoStorePackagesAndNotItsInternals() {
    ModuleDescriptors.assertExports(STORE,
        Set.of("io.kvtier.store.memory", "io.kvtier.store.file"));
    assertThat(STORE.getDescriptor().packages()).contains("io.kvtier.store.internal");
  }

  @Test
  void serviceLoaderFindsBothStoresByName() {
    assertThat(Providers.named(KvStoreProvider.class, "memory"))
        .isInstanceOf(MemoryKvStoreProvider.class);
    assertThat(Providers.named(KvStoreProvider.class, "file"))
        .isInstanceOf(FileKvStoreProvider.class);
  }
}
