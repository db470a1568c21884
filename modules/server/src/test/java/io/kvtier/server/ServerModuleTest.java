package io.kvtier.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor.Requires;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.server: on the serving API, never on the command line or a model. */
class ServerModuleTest extends ModuleSuite {

  ServerModuleTest() {
    super(CompletionServer.class.getModule(), "io.kvtier.server");
  }

  @Test
  void requiresTheServingApiAndNoModel() {
    assertThat(module().getDescriptor().requires().stream().map(Requires::name))
        .contains("io.kvtier.serving")
        .noneMatch(name -> name.startsWith("io.kvtier.cli") || name.startsWith("io.kvtier.model"));
  }
}
