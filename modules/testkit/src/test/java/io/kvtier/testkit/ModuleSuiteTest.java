package io.kvtier.testkit;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.asserting.AssertingDeviceMemoryProvider;
import io.kvtier.asserting.AssertingHostMemoryProvider;
import io.kvtier.asserting.FaultyKvStoreProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvStoreProvider;
import org.junit.jupiter.api.Test;

/** The suite fails, naming the difference, when a module differs from its declaration. */
class ModuleSuiteTest {

  private static final Module ASSERTING = AssertingDeviceMemoryProvider.class.getModule();

  /** A suite over the asserting module with whatever a test declares. */
  private static final class Declared extends ModuleSuite {
    Declared(Module module, String... exports) {
      super(module, exports);
    }

    Declared providing(Class<?> service, Class<?>... implementations) {
      provides(service, implementations);
      return this;
    }

    Declared exporting(String pkg, String... targets) {
      exportsTo(pkg, targets);
      return this;
    }
  }

  @Test
  void aTrueDeclarationPasses() {
    Declared suite =
        new Declared(ASSERTING, "io.kvtier.asserting")
            .providing(DeviceMemoryProvider.class, AssertingDeviceMemoryProvider.class)
            .providing(HostMemoryProvider.class, AssertingHostMemoryProvider.class)
            .providing(KvStoreProvider.class, FaultyKvStoreProvider.class);
    assertThatCode(
            () -> {
              suite.theModuleIsNamed();
              suite.providesAgreeWithTheServicesFiles();
              suite.providesExactlyTheIntendedProviders();
              suite.providersCarryTheirNames();
              suite.exportsExactlyTheIntendedPackages();
            })
        .doesNotThrowAnyException();
  }

  @Test
  void anUndeclaredProviderFailsNamingTheModule() {
    Declared suite =
        new Declared(ASSERTING, "io.kvtier.asserting")
            .providing(DeviceMemoryProvider.class, AssertingDeviceMemoryProvider.class);
    assertThatThrownBy(suite::providesExactlyTheIntendedProviders)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("module io.kvtier.asserting provides")
        .hasMessageContaining(AssertingHostMemoryProvider.class.getName());
  }

  @Test
  void aMissingOrUnexpectedExportFailsNamingIt() {
    assertThatThrownBy(
            new Declared(ASSERTING, "io.kvtier.asserting", "io.kvtier.asserting.x")
                ::exportsExactlyTheIntendedPackages)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("missing: [io.kvtier.asserting.x]");
    assertThatThrownBy(
            new Declared(ASSERTING, "io.kvtier.asserting")
                    .exporting("io.kvtier.asserting", "io.kvtier.simulator")
                ::exportsExactlyTheIntendedPackages)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(
            "has qualified exports {} but the intended ones are"
                + " {io.kvtier.asserting=[io.kvtier.simulator]}");
  }

  @Test
  void aModuleOnTheClassPathFailsSayingSo() {
    Module unnamed = ClassLoader.getSystemClassLoader().getUnnamedModule();
    assertThatThrownBy(new Declared(unnamed)::theModuleIsNamed)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("run the tests on the module path");
  }

  @Test
  void aDeclarationWithoutClassesOrTargetsIsRejected() {
    Declared suite = new Declared(ASSERTING);
    assertThatThrownBy(() -> suite.providing(DeviceMemoryProvider.class))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("name at least one provider class");
    assertThatThrownBy(() -> suite.exporting("io.kvtier.asserting"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("name at least one module");
  }
}
