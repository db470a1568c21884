package io.kvtier.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.ModuleDescriptors;
import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleDescriptor.Requires;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The descriptor of {@code io.kvtier.core}: what it exports (the checks every module runs, from
 * the testkit), uses, requires and opens.
 */
class ModuleDescriptorTest extends ModuleSuite {

  ModuleDescriptorTest() {
    super(
        KvTierBackends.class.getModule(),
        "io.kvtier.core",
        "io.kvtier.core.config",
        "io.kvtier.core.discovery",
        "io.kvtier.core.inject",
        "io.kvtier.core.cache",
        "io.kvtier.core.rank",
        "io.kvtier.core.tenant");
    // The deliberately broken rules, proving that the simulator and the cli's snapshot tests
    // catch them (the cli's main code does not use them).
    exportsTo("io.kvtier.core.cache.testing", "io.kvtier.simulator", "io.kvtier.cli");
  }

  private static ModuleDescriptor descriptor() {
    return ModuleDescriptors.descriptorOf(KvTierBackends.class.getModule());
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
    assertThat(spi)
        .hasValueSatisfying(r -> assertThat(r.modifiers()).contains(Requires.Modifier.TRANSITIVE));
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
