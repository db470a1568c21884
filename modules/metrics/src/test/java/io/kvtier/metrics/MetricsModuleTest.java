package io.kvtier.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor.Requires;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.metrics: on the serving API, never on the command line. */
class MetricsModuleTest extends ModuleSuite {

  MetricsModuleTest() {
    super(KvTierMeters.class.getModule(), "io.kvtier.metrics");
  }

  @Test
  void requiresTheServingApiAndNotTheCommandLine() {
    assertThat(module().getDescriptor().requires().stream().map(Requires::name))
        .contains("io.kvtier.serving", "micrometer.core")
        .noneMatch(name -> name.startsWith("io.kvtier.cli") || name.startsWith("io.kvtier.model"));
  }
}
