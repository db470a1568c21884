package io.kvtier.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleDescriptor.Exports;
import java.lang.module.ModuleDescriptor.Requires;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The descriptor of {@code io.kvtier.core}: what it exports, uses and requires. */
class ModuleDescriptorTest {

  private static ModuleDescriptor descriptor() {
    Module module = KvTierBackends.class.getModule();
    assertThat(module.isNamed()).as("tests run on the module path").isTrue();
    return module.getDescriptor();
  }

  @Test
  void exportsExactlyTheApiPackagesToEveryone() {
    Set<Exports> exports = descriptor().exports();

    assertThat(exports.stream().filter(e -> !e.isQualified()).map(Exports::source))
        .containsExactlyInAnyOrder(
            "io.kvtier.core",
            "io.kvtier.core.config",
            "io.kvtier.core.discovery",
            "io.kvtier.core.inject",
            "io.kvtier.core.cache",
            "io.kvtier.core.rank");
  }

  @Test
  void exportsTheCacheTestHooksOnlyToTheSimulator() {
    Set<Exports> qualified =
        descriptor().exports().stream().filter(Exports::isQualified).collect(Collectors.toSet());

    assertThat(qualified)
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.source()).isEqualTo("io.kvtier.core.cache.testing");
              assertThat(e.targets()).containsExactly("io.kvtier.simulator");
            });
  }

  @Test
  void usesTheFourProviderInterfacesAndProvidesNothing() {
    assertThat(descriptor().uses())
        .containsExactlyInAnyOrder(
            "io.kvtier.spi.DeviceMemoryProvider",
            "io.kvtier.spi.HostMemoryProvider",
            "io.kvtier.spi.CollectiveProvider",
            "io.kvtier.spi.KvStoreProvider");
    assertThat(descriptor().provides()).isEmpty();
  }

  @Test
  void guiceIsOptionalAtRunTimeAndTheSpiIsTransitive() {
    Set<String> staticRequires =
        descriptor().requires().stream()
            .filter(r -> r.modifiers().contains(Requires.Modifier.STATIC))
            .map(Requires::name)
            .collect(Collectors.toSet());
    Optional<Requires> spi =
        descriptor().requires().stream().filter(r -> r.name().equals("io.kvtier.spi")).findFirst();

    assertThat(staticRequires).contains("com.google.guice", "jakarta.inject");
    assertThat(spi).hasValueSatisfying(
        r -> assertThat(r.modifiers()).contains(Requires.Modifier.TRANSITIVE));
  }

  @Test
  void opensOnlyTheGuiceModulePackageAndOnlyToGuice() {
    assertThat(descriptor().opens())
        .singleElement()
        .satisfies(
            o -> {
              assertThat(o.source()).isEqualTo("io.kvtier.core.inject");
              assertThat(o.targets()).containsExactly("com.google.guice");
            });
  }
}
