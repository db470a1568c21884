package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.ProviderName;
import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class SimModuleTest {

  private static final Map<Class<?>, Class<? extends KvTierProvider>> PROVIDERS =
      Map.of(
          DeviceMemoryProvider.class, SimDeviceMemoryProvider.class,
          HostMemoryProvider.class, SimHostMemoryProvider.class,
          CollectiveProvider.class, LocalCollectiveProvider.class);

  private static ModuleDescriptor descriptor() {
    Module module = SimConfig.class.getModule();
    assertThat(module.isNamed()).as("tests run on the module path").isTrue();
    return module.getDescriptor();
  }

  @Test
  void exportsOnlyItsApiPackage() {
    assertThat(descriptor().exports())
        .extracting(ModuleDescriptor.Exports::source)
        .containsExactly("io.kvtier.backend.sim");
    assertThat(descriptor().exports()).allSatisfy(e -> assertThat(e.isQualified()).isFalse());
  }

  @Test
  void moduleInfoAndServiceFilesDeclareTheSameProviders() throws IOException {
    Map<String, Set<String>> fromModule = new TreeMap<>();
    for (ModuleDescriptor.Provides p : descriptor().provides()) {
      fromModule.put(p.service(), new TreeSet<>(p.providers()));
    }
    Map<String, Set<String>> fromFiles = new TreeMap<>();
    for (Class<?> service : PROVIDERS.keySet()) {
      String path = "META-INF/services/" + service.getName();
      try (InputStream in = SimConfig.class.getModule().getResourceAsStream(path)) {
        assertThat(in).as(path).isNotNull();
        fromFiles.put(
            service.getName(),
            new String(in.readAllBytes(), StandardCharsets.UTF_8)
                .lines()
                .map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .collect(Collectors.toCollection(TreeSet::new)));
      }
    }
    assertThat(fromModule).isEqualTo(fromFiles);
    Map<String, Set<String>> expected = new TreeMap<>();
    PROVIDERS.forEach((s, p) -> expected.put(s.getName(), Set.of(p.getName())));
    assertThat(fromModule).isEqualTo(expected);
  }

  @Test
  void providersAreNamedAvailableAndShareTheSimNamespace() throws Exception {
    for (Class<? extends KvTierProvider> type : PROVIDERS.values()) {
      KvTierProvider provider = type.getConstructor().newInstance();
      String expectedName = type == LocalCollectiveProvider.class ? "local" : "sim";
      assertThat(provider.name()).isEqualTo(expectedName);
      assertThat(type.getAnnotation(ProviderName.class).value()).isEqualTo(provider.name());
      assertThat(provider.availability().available()).isTrue();
      assertThat(provider.availability().reason()).isNotBlank();
      assertThat(provider.configNamespace()).isEqualTo("sim");
    }
  }

  @Test
  void serviceLoaderFindsEachProviderWithoutInstantiatingIt() {
    for (var entry : PROVIDERS.entrySet()) {
      // The backend never loads services itself, so its module declares no `uses`; the test does.
      SimModuleTest.class.getModule().addUses(entry.getKey());
      List<Class<?>> types =
          ServiceLoader.load(SimConfig.class.getModule().getLayer(), entry.getKey()).stream()
              .map(ServiceLoader.Provider::type)
              .collect(Collectors.toList());
      assertThat(types).as(entry.getKey().getSimpleName()).contains(entry.getValue());
    }
  }
}
