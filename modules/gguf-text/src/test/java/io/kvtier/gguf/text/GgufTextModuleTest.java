package io.kvtier.gguf.text;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor.Requires;
import org.junit.jupiter.api.Test;

/**
 * The descriptor of io.kvtier.gguf.text: one exported package; it reads the GGUF library, the
 * serving engine's seam and Jinjava, and never the HTTP server or a model.
 */
class GgufTextModuleTest extends ModuleSuite {

  GgufTextModuleTest() {
    super(GgufText.class.getModule(), "io.kvtier.gguf.text");
  }

  @Test
  void readsTheGgufLibraryTheSeamAndJinjava() {
    assertThat(module().getDescriptor().requires().stream().map(Requires::name))
        .contains("io.kvtier.gguf", "io.kvtier.serving", "jinjava")
        .noneMatch(name -> name.equals("io.kvtier.server") || name.startsWith("io.kvtier.model"));
  }
}
