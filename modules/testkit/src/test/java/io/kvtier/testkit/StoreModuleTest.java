package io.kvtier.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.KvStoreProvider;
import io.kvtier.store.file.FileKvStoreProvider;
import io.kvtier.store.memory.MemoryKvStoreProvider;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The module checks of io.kvtier.store, run here because the stores' own tests cannot depend on
 * the testkit (the testkit depends on the stores to run their conformance).
 */
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
    List<Class<?>> types = ServiceLoader.load(KvStoreProvider.class).stream()
        .<Class<?>>map(ServiceLoader.Provider::type)
        .filter(t -> t.getModule() == STORE)
        .toList();
    assertThat(types).containsExactlyInAnyOrder(MemoryKvStoreProvider.class,
        FileKvStoreProvider.class);
    assertThat(Providers.named(KvStoreProvider.class, "memory"))
        .isInstanceOf(MemoryKvStoreProvider.class);
    assertThat(Providers.named(KvStoreProvider.class, "file"))
        .isInstanceOf(FileKvStoreProvider.class);
  }
}
