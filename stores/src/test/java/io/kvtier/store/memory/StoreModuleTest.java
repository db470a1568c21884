package io.kvtier.store.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.store.file.FileKvStoreProvider;
import io.kvtier.testkit.ModuleSuite;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.store: the two stores, two API packages, internals kept in. */
class StoreModuleTest extends ModuleSuite {

  StoreModuleTest() {
    super(
        MemoryKvStoreProvider.class.getModule(), "io.kvtier.store.memory", "io.kvtier.store.file");
    provides(KvStoreProvider.class, MemoryKvStoreProvider.class, FileKvStoreProvider.class);
  }

  @Test
  void keepsItsInternalsUnexported() {
    assertThat(module().getDescriptor().packages()).contains("io.kvtier.store.internal");
  }

  @Test
  void serviceLoaderFindsBothStoresByName() {
    assertThat(Providers.named(KvStoreProvider.class, "memory"))
        .isInstanceOf(MemoryKvStoreProvider.class);
    assertThat(Providers.named(KvStoreProvider.class, "file"))
        .isInstanceOf(FileKvStoreProvider.class);
  }
}
