package io.kvtier.core.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.discovery.FakeProviders.Anonymous;
import io.kvtier.core.discovery.FakeProviders.Checked;
import io.kvtier.core.discovery.FakeProviders.Counted;
import io.kvtier.core.discovery.FakeProviders.Exploding;
import io.kvtier.core.discovery.FakeProviders.Gpu;
import io.kvtier.core.discovery.FakeProviders.Liar;
import io.kvtier.core.discovery.FakeProviders.Malformed;
import io.kvtier.core.discovery.FakeProviders.NoGpu;
import io.kvtier.core.discovery.FakeProviders.OtherSim;
import io.kvtier.core.discovery.FakeProviders.OwnNamespace;
import io.kvtier.core.discovery.FakeProviders.Reserved;
import io.kvtier.core.discovery.FakeProviders.Sim;
import io.kvtier.core.discovery.FakeProviders.ThrowingProbe;
import io.kvtier.spi.DeviceMemoryProvider;
import java.util.List;
import org.junit.jupiter.api.Test;

class ProviderRegistryTest {

  private static ProviderRegistry<DeviceMemoryProvider> registry(Counted... counted) {
    return ProviderRegistry.of(
        DeviceMemoryProvider.class,
        java.util.Arrays.stream(counted).map(c -> c.candidate).toList());
  }

  @Test
  void listsNamesSortedWithoutInstantiating() {
    Counted sim = new Counted(Sim.class, Sim::new);
    Counted cuda = new Counted(NoGpu.class, NoGpu::new);
    Counted exploding = new Counted(Exploding.class, Exploding::new);

    ProviderRegistry<DeviceMemoryProvider> registry = registry(sim, exploding, cuda);

    assertThat(registry.names()).containsExactly("cuda", "exploding", "sim");
    assertThat(registry.candidates())
        .extracting(ProviderCandidate::type)
        .containsExactly(NoGpu.class, Exploding.class, Sim.class);
    assertThat(sim.created.get() + cuda.created.get() + exploding.created.get()).isZero();
  }

  @Test
  void selectsByNameInstantiatingOnlyTheSelectedProviderOnce() {
    Counted sim = new Counted(Sim.class, Sim::new);
    Counted exploding = new Counted(Exploding.class, Exploding::new);
    ProviderRegistry<DeviceMemoryProvider> registry = registry(exploding, sim);

    DeviceMemoryProvider first = registry.get("sim");
    DeviceMemoryProvider second = registry.select("sim", List.of());

    assertThat(first).isInstanceOf(Sim.class).isSameAs(second);
    assertThat(sim.created).hasValue(1);
    assertThat(exploding.created).hasValue(0);
  }

  @Test
  void duplicateNamesAreAnErrorNamingBothClasses() {
    assertThatThrownBy(
            () ->
                registry(
                    new Counted(Sim.class, Sim::new), new Counted(OtherSim.class, OtherSim::new)))
        .isInstanceOf(ProviderConflictException.class)
        .hasMessageContaining("io.kvtier.spi.DeviceMemoryProvider")
        .hasMessageContaining("'sim'")
        .hasMessageContaining(Sim.class.getName())
        .hasMessageContaining(OtherSim.class.getName())
        .hasMessageContaining("remove one module");
  }

  @Test
  void unknownNameListsWhatWasFoundAndTheFix() {
    ProviderRegistry<DeviceMemoryProvider> registry =
        registry(new Counted(Sim.class, Sim::new), new Counted(Exploding.class, Exploding::new));

    assertThatThrownBy(() -> registry.get("cuda"))
        .isInstanceOf(ProviderNotFoundException.class)
        .hasMessageContaining("io.kvtier.spi.DeviceMemoryProvider")
        .hasMessageContaining("'cuda'")
        .hasMessageContaining("kvtier.device=cuda")
        .hasMessageContaining("sim (available: fake simulation")
        .hasMessageContaining("exploding (broken")
        .hasMessageContaining("native library missing (fake)")
        .hasMessageContaining(
            "put the module providing 'cuda' (kvtier-backend-cuda) on the module path, or choose"
                + " one of: sim.");
  }

  @Test
  void testingProvidersAreReportedAsSuchAndNeverOfferedAsTheFix() {
    ProviderRegistry<DeviceMemoryProvider> registry =
        registry(
            new Counted(Sim.class, Sim::new),
            new Counted(Checked.class, Checked::new),
            new Counted(NoGpu.class, NoGpu::new));

    assertThat(registry.reports())
        .filteredOn(ProviderReport::testing)
        .extracting(ProviderReport::name)
        .containsExactly("checked");
    assertThatThrownBy(() -> registry.select("cuda", List.of("cuda", "sim")))
        .isInstanceOf(ProviderUnavailableException.class)
        .hasMessageContaining("sim (available")
        .hasMessageContaining("Testing providers, for tests only: checked.")
        .hasMessageContaining("choose one of: sim.")
        .hasMessageNotContaining("checked (available");
    assertThatThrownBy(() -> registry.select("nope", List.of()))
        .isInstanceOf(ProviderNotFoundException.class)
        .hasMessageContaining("choose one of: sim.");
    assertThat(registry.get("checked")).isInstanceOf(Checked.class);
  }

  @Test
  void unavailableProviderFailsWithItsReason() {
    ProviderRegistry<DeviceMemoryProvider> registry =
        registry(new Counted(Sim.class, Sim::new), new Counted(NoGpu.class, NoGpu::new));

    assertThatThrownBy(() -> registry.select("cuda", List.of("cuda", "sim")))
        .isInstanceOf(ProviderUnavailableException.class)
        .hasMessageContaining("'cuda' (kvtier.device=cuda) is unavailable: no GPU in this fake")
        .hasMessageContaining("cuda (unavailable: no GPU in this fake: install one")
        .hasMessageContaining("sim (available")
        .hasMessageContaining("choose one of: sim.");
  }

  @Test
  void autoTakesTheFirstAvailableNameInOrderAndSkipsAbsentNames() {
    Counted sim = new Counted(Sim.class, Sim::new);
    Counted cuda = new Counted(NoGpu.class, NoGpu::new);
    ProviderRegistry<DeviceMemoryProvider> registry = registry(sim, cuda);

    assertThat(registry.select("auto", List.of("mpi", "cuda", "sim"))).isInstanceOf(Sim.class);
    assertThat(cuda.created).hasValue(1);

    Counted gpu = new Counted(Gpu.class, Gpu::new);
    Counted sim2 = new Counted(Sim.class, Sim::new);
    assertThat(registry(gpu, sim2).select("auto", List.of("cuda", "sim"))).isInstanceOf(Gpu.class);
    assertThat(sim2.created).as("providers after the chosen one stay uninstantiated").hasValue(0);
  }

  @Test
  void autoDoesNotTouchProvidersOutsideItsOrder() {
    Counted exploding = new Counted(Exploding.class, Exploding::new);
    Counted sim = new Counted(Sim.class, Sim::new);

    assertThat(registry(exploding, sim).auto(List.of("sim"))).containsInstanceOf(Sim.class);
    assertThat(exploding.created).hasValue(0);
  }

  @Test
  void autoSkipsABrokenPreferredProvider() {
    Counted exploding = new Counted(Exploding.class, Exploding::new);
    Counted liar = new Counted(Liar.class, Liar::new);
    Counted sim = new Counted(Sim.class, Sim::new);
    ProviderRegistry<DeviceMemoryProvider> registry = registry(exploding, liar, sim);

    assertThat(registry.select("auto", List.of("exploding", "liar", "sim")))
        .isInstanceOf(Sim.class);
    assertThat(exploding.created).hasValue(1);
    assertThatThrownBy(
            () ->
                registry(new Counted(Exploding.class, Exploding::new))
                    .select("auto", List.of("exploding")))
        .isInstanceOf(ProviderUnavailableException.class)
        .hasMessageContaining("exploding broken");
  }

  @Test
  void autoWithNothingAvailableSaysWhatItTried() {
    ProviderRegistry<DeviceMemoryProvider> onlyUnavailable =
        registry(new Counted(NoGpu.class, NoGpu::new));
    assertThatThrownBy(() -> onlyUnavailable.select("auto", List.of("cuda", "sim")))
        .isInstanceOf(ProviderUnavailableException.class)
        .hasMessageContaining("kvtier.device=auto")
        .hasMessageContaining("[cuda, sim]")
        .hasMessageContaining("cuda unavailable, sim not on the module path")
        .hasMessageContaining("'sim' (kvtier-backend-sim)")
        .hasMessageContaining("choose one of: (none is available)");

    ProviderRegistry<DeviceMemoryProvider> empty = registry();
    assertThatThrownBy(() -> empty.select("auto", List.of("cuda", "sim")))
        .isInstanceOf(ProviderNotFoundException.class)
        .hasMessageContaining("No provider of it is on the module path");
    assertThat(empty.auto(List.of("cuda"))).isEmpty();
  }

  @Test
  void aProviderWhoseNameDiffersFromItsAnnotationIsAnError() {
    ProviderRegistry<DeviceMemoryProvider> registry = registry(new Counted(Liar.class, Liar::new));

    assertThatThrownBy(() -> registry.get("liar"))
        .isInstanceOf(ProviderDeclarationException.class)
        .hasMessageContaining(Liar.class.getName())
        .hasMessageContaining("@ProviderName(\"liar\")")
        .hasMessageContaining("name() returns \"truth\"");
    assertThat(registry.reports())
        .singleElement()
        .satisfies(r -> assertThat(r.status()).isEqualTo(ProviderReport.Status.BROKEN));
  }

  @Test
  void selectingAProviderWhoseConstructorThrowsNamesTheClass() {
    Counted exploding = new Counted(Exploding.class, Exploding::new);
    ProviderRegistry<DeviceMemoryProvider> registry = registry(exploding);

    for (int attempt = 0; attempt < 2; attempt++) {
      assertThatThrownBy(() -> registry.get("exploding"))
          .isInstanceOf(ProviderDeclarationException.class)
          .hasMessageContaining(Exploding.class.getName())
          .hasMessageContaining("could not be instantiated")
          .hasRootCauseMessage("native library missing (fake)");
    }
    assertThat(exploding.created).as("a failed constructor is not retried").hasValue(1);
  }

  @Test
  void aThrowingProbeIsReportedBrokenNotThrownFromTheListing() {
    ProviderRegistry<DeviceMemoryProvider> registry =
        registry(new Counted(ThrowingProbe.class, ThrowingProbe::new));

    assertThat(registry.reports())
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.status()).isEqualTo(ProviderReport.Status.BROKEN);
              assertThat(r.reason()).contains("probe crashed (fake)");
            });
    assertThatThrownBy(() -> registry.get("prober"))
        .isInstanceOf(ProviderDeclarationException.class)
        .hasMessageContaining("availability() probe of provider 'prober'");
  }

  @Test
  void reportsListEveryProviderWithModuleClassAndAvailability() {
    ProviderRegistry<DeviceMemoryProvider> registry =
        registry(new Counted(Sim.class, Sim::new), new Counted(NoGpu.class, NoGpu::new));

    assertThat(registry.reports())
        .containsExactly(
            new ProviderReport(
                "io.kvtier.spi.DeviceMemoryProvider",
                "cuda",
                "io.kvtier.core",
                NoGpu.class.getName(),
                ProviderReport.Status.UNAVAILABLE,
                "no GPU in this fake: install one"),
            new ProviderReport(
                "io.kvtier.spi.DeviceMemoryProvider",
                "sim",
                "io.kvtier.core",
                Sim.class.getName(),
                ProviderReport.Status.AVAILABLE,
                "fake simulation"));
  }

  @Test
  void aProviderClassWithoutAnnotationIsAnErrorNamingIt() {
    assertThatThrownBy(() -> new Counted(Anonymous.class, Anonymous::new))
        .isInstanceOf(ProviderDeclarationException.class)
        .hasMessageContaining(Anonymous.class.getName())
        .hasMessageContaining("has no @io.kvtier.spi.ProviderName annotation");
  }

  @Test
  void reservedAndMalformedNamesAreRejected() {
    assertThatThrownBy(() -> new Counted(Reserved.class, Reserved::new))
        .isInstanceOf(ProviderDeclarationException.class)
        .hasMessageContaining(Reserved.class.getName())
        .hasMessageContaining("'auto' is reserved");
    assertThatThrownBy(() -> new Counted(Malformed.class, Malformed::new))
        .isInstanceOf(ProviderDeclarationException.class)
        .hasMessageContaining("@ProviderName(\"Bad_Name\")")
        .hasMessageContaining("lower-case letters");
    assertThat(ProviderCandidate.isValidName("backend-sim2")).isTrue();
    assertThat(ProviderCandidate.isValidName("-sim")).isFalse();
    assertThat(ProviderCandidate.isValidName("none")).isFalse();
  }

  @Test
  void namespacesInstantiateOnlyProvidersThatOverrideTheirNamespace() {
    Counted sim = new Counted(Sim.class, Sim::new);
    Counted shared = new Counted(OwnNamespace.class, OwnNamespace::new);
    Counted exploding = new Counted(Exploding.class, Exploding::new);

    assertThat(registry(sim, shared, exploding).namespaces())
        .containsExactly("exploding", "family", "sim");
    assertThat(sim.created).hasValue(0);
    assertThat(exploding.created).hasValue(0);
    assertThat(shared.created).hasValue(1);
  }
}
