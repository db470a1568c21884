package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor.Requires;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.examples: one package, and no backend named in the code. */
class ExamplesModuleTest extends ModuleSuite {

  ExamplesModuleTest() {
    super(EmbeddingExample.class.getModule(), "io.kvtier.examples");
  }

  @Test
  void requiresTheEngineAndNoBackend() {
    assertThat(module().getDescriptor().requires().stream().map(Requires::name))
        .contains("io.kvtier.core")
        .noneMatch(
            name ->
                name.startsWith("io.kvtier.backend")
                    || name.startsWith("io.kvtier.collective")
                    || name.equals("io.kvtier.store"));
  }
}
