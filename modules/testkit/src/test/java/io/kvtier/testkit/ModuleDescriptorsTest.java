package io.kvtier.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.asserting.AssertingDeviceMemoryProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The module checks on real modules: testkit itself, the asserting wrappers and the SPI, and
 * that each check fails when the intended set differs.
 */
class ModuleDescriptorsTest {

  private static final Module TESTKIT = ModuleDescriptors.class.getModule();
  private static final Module ASSERTING = AssertingDeviceMemoryProvider.class.getModule();
  private static final Module SPI = DeviceMemoryProvider.class.getModule();

  @Test
  void testsRunOnTheModulePath() {
    assertThat(TESTKIT.getName()).isEqualTo("io.kvtier.testkit");
    assertThat(ASSERTING.getName()).isEqualTo("io.kvtier.asserting");
    assertThat(SPI.getName()).isEqualTo("io.kvtier.spi");
  }

  @Test
  void assertingProvidesWhatItsServiceFilesListAndExportsOnePackage() {
    ModuleDescriptors.assertProvidesMatchServiceFiles(ASSERTING);
    assertThat(ModuleDescriptors.serviceFileNames(ASSERTING))
        .containsExactly(
            "io.kvtier.spi.DeviceMemoryProvider",
            "io.kvtier.spi.HostMemoryProvider",
            "io.kvtier.spi.KvStoreProvider");
    assertThat(ModuleDescriptors.serviceFileLines(ASSERTING, "io.kvtier.spi.DeviceMemoryProvider"))
        .containsExactly(AssertingDeviceMemoryProvider.class.getName());
    ModuleDescriptors.assertProviderNames(ASSERTING);
    ModuleDescriptors.assertExports(ASSERTING, Set.of("io.kvtier.asserting"));
  }

  @Test
  void theSpiExportsOnlyItsPackagesAndProvidesNothing() {
    ModuleDescriptors.assertExports(SPI, Set.of("io.kvtier.spi", "io.kvtier.spi.config"));
    ModuleDescriptors.assertProvidesMatchServiceFiles(SPI);
    assertThat(ModuleDescriptors.serviceFileNames(SPI)).isEmpty();
  }

  @Test
  void exportsThatDifferFromTheIntendedOnesFailNamingTheDifference() {
    assertThatThrownBy(
            () ->
                ModuleDescriptors.assertExports(
                    SPI, Set.of("io.kvtier.spi", "io.kvtier.spi.config", "io.kvtier.spi.internal")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("module io.kvtier.spi: exports [io.kvtier.spi, io.kvtier.spi.config]")
        .hasMessageContaining("missing: [io.kvtier.spi.internal]");
    assertThatThrownBy(() -> ModuleDescriptors.assertExports(TESTKIT, Set.of("io.kvtier.testkit")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(
            "unexpected: [io.kvtier.testkit.config," + " io.kvtier.testkit.conformance]");
    assertThatThrownBy(
            () ->
                ModuleDescriptors.assertExports(
                    SPI,
                    Set.of("io.kvtier.spi", "io.kvtier.spi.config"),
                    Map.of("io.kvtier.spi", Set.of("io.kvtier.core"))))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(
            "has qualified exports {} but the intended ones are"
                + " {io.kvtier.spi=[io.kvtier.core]}");
  }

  @Test
  void providesAndServiceFilesAreComparedInBothDirections() {
    String spi = "io.kvtier.spi.DeviceMemoryProvider";
    assertThat(
            ModuleDescriptors.providesProblems(
                Map.of(spi, Set.of("a.A", "b.B")), Map.of(spi, java.util.List.of("b.B", "a.A"))))
        .isEmpty();
    assertThat(
            ModuleDescriptors.providesProblems(
                Map.of(spi, Set.of("a.A", "b.B")), Map.of(spi, java.util.List.of("a.A"))))
        .singleElement()
        .asString()
        .contains("only in module-info: [b.B], only in the services file: []");
    assertThat(ModuleDescriptors.providesProblems(Map.of(), Map.of(spi, java.util.List.of("a.A"))))
        .singleElement()
        .asString()
        .contains("module-info provides [] but META-INF/services/" + spi + " lists [a.A]");
    assertThat(ModuleDescriptors.providesProblems(Map.of(spi, Set.of("a.A")), Map.of()))
        .singleElement()
        .asString()
        .contains("only in module-info: [a.A]");
    assertThat(
            ModuleDescriptors.providesProblems(
                Map.of(spi, Set.of("a.A")), Map.of(spi, java.util.List.of("a.A", "a.A"))))
        .singleElement()
        .asString()
        .contains("lists a provider twice");
  }

  @Test
  void serviceFilesAreReadWithoutCommentsAndBlankLines() {
    assertThat(ModuleDescriptors.serviceFileLines(ASSERTING, "io.kvtier.spi.HostMemoryProvider"))
        .containsExactly("io.kvtier.asserting.AssertingHostMemoryProvider");
    assertThat(ModuleDescriptors.serviceFileLines(ASSERTING, "no.such.Service")).isEmpty();
  }

  @Test
  void anUnnamedModuleIsRejectedWithTheReason() {
    Module unnamed = ClassLoader.getSystemClassLoader().getUnnamedModule();
    assertThatThrownBy(() -> ModuleDescriptors.assertExports(unnamed, Set.of()))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("is unnamed")
        .hasMessageContaining("run the tests on the module path");
  }
}
