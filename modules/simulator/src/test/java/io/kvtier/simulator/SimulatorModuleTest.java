package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor.Requires;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.simulator: three packages, no providers, no test library. */
class SimulatorModuleTest extends ModuleSuite {

  SimulatorModuleTest() {
    super(
        MultiRankSimulator.class.getModule(),
        "io.kvtier.simulator",
        "io.kvtier.simulator.workload",
        "io.kvtier.simulator.replay");
  }

  @Test
  void requiresNoTestLibrary() {
    assertThat(module().getDescriptor().requires().stream().map(Requires::name))
        .contains("io.kvtier.core", "io.kvtier.asserting")
        .noneMatch(
            name ->
                name.startsWith("org.junit")
                    || name.startsWith("org.assertj")
                    || name.startsWith("net.bytebuddy")
                    || name.equals("io.kvtier.testkit"));
  }
}
