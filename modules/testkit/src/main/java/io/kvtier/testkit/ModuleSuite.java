package io.kvtier.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The module-layer test that every kvtier module runs by subclassing (after Lucene's
 * TestModularLayer and Caffeine's ModuleTest): the module is named (its tests run on the module
 * path), its {@code provides} agree with its {@code META-INF/services} files in both directions,
 * it provides exactly the intended providers, each of them carries a {@code @ProviderName} equal
 * to its {@code name()}, and it exports exactly the intended packages.
 *
 * <pre>{@code
 * class SimModuleTest extends ModuleSuite {
 *   SimModuleTest() {
 *     super(SimConfig.class.getModule(), "io.kvtier.backend.sim");
 *     provides(DeviceMemoryProvider.class, SimDeviceMemoryProvider.class);
 *   }
 * }
 * }</pre>
 *
 * <p>The checks themselves are {@link ModuleDescriptors}'; a subclass may add tests of its own
 * (requires, opens, uses).
 */
public abstract class ModuleSuite {

  private final Module module;
  private final Set<String> exports;
  private final Map<String, Set<String>> qualifiedExports = new TreeMap<>();
  private final Map<String, Set<String>> providers = new TreeMap<>();

  /**
   * A suite for a module that exports {@code exports} to everyone and, until {@link
   * #provides} and {@link #exportsTo} say more, provides nothing and has no qualified exports.
   *
   * @param module the module under test, for example {@code SomeClass.class.getModule()}
   * @param exports the packages it must export without qualification
   */
  protected ModuleSuite(Module module, String... exports) {
    this.module = Objects.requireNonNull(module, "module");
    this.exports = Set.of(exports);
  }

  /**
   * Declares that the module provides {@code service} with exactly {@code implementations}.
   *
   * @param service the service interface, for example {@code DeviceMemoryProvider.class}
   * @param implementations the provider classes, at least one
   */
  protected final void provides(Class<?> service, Class<?>... implementations) {
    Objects.requireNonNull(service, "service");
    if (implementations.length == 0) {
      throw new IllegalArgumentException(
          "provides(" + service.getName() + "): name at least one provider class");
    }
    providers.put(
        service.getName(),
        Arrays.stream(implementations)
            .map(Class::getName)
            .collect(Collectors.toCollection(TreeSet::new)));
  }

  /**
   * Declares that the module exports {@code pkg} to exactly {@code targets} only.
   *
   * @param pkg the package
   * @param targets the modules it is exported to, at least one
   */
  protected final void exportsTo(String pkg, String... targets) {
    Objects.requireNonNull(pkg, "pkg");
    if (targets.length == 0) {
      throw new IllegalArgumentException("exportsTo(" + pkg + "): name at least one module");
    }
    qualifiedExports.put(pkg, new TreeSet<>(Arrays.asList(targets)));
  }

  /**
   * The module under test.
   *
   * @return the module
   */
  protected final Module module() {
    return module;
  }

  /** The tests run on the module path, so the module has a descriptor to check. */
  @Test
  public void theModuleIsNamed() {
    ModuleDescriptors.descriptorOf(module);
  }

  /** {@code provides} and {@code META-INF/services} list the same providers. */
  @Test
  public void providesAgreeWithTheServicesFiles() {
    ModuleDescriptors.assertProvidesMatchServiceFiles(module);
  }

  /** The module provides exactly the intended providers, no more. */
  @Test
  public void providesExactlyTheIntendedProviders() {
    Map<String, Set<String>> declared = new TreeMap<>();
    for (ModuleDescriptor.Provides p : ModuleDescriptors.descriptorOf(module).provides()) {
      declared.put(p.service(), new TreeSet<>(p.providers()));
    }
    assertThat(declared)
        .as(
            "module %s provides; change module-info.java (and META-INF/services) or the"
                + " suite's provides(...)",
            module.getName())
        .isEqualTo(providers);
  }

  /** Every kvtier provider's {@code @ProviderName} equals its {@code name()}. */
  @Test
  public void providersCarryTheirNames() {
    ModuleDescriptors.assertProviderNames(module);
  }

  /** The module exports exactly the intended packages, qualified ones included. */
  @Test
  public void exportsExactlyTheIntendedPackages() {
    ModuleDescriptors.assertExports(module, exports, qualifiedExports);
  }
}
