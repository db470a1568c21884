package io.kvtier.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import org.junit.jupiter.api.Test;

/** io.kvtier.gguf is a leaf: its two API packages exported, nothing of kvtier's required. */
class GgufModuleTest {
  private final Module module = GgufFile.class.getModule();

  @Test
  void exportsItsTwoPackagesAndRequiresOnlyTheJdk() {
    assertThat(module.isNamed()).as("tests run on the module path").isTrue();
    ModuleDescriptor descriptor = module.getDescriptor();
    assertThat(descriptor.name()).isEqualTo("io.kvtier.gguf");
    assertThat(descriptor.exports())
        .map(ModuleDescriptor.Exports::source)
        .containsExactlyInAnyOrder("io.kvtier.gguf", "io.kvtier.gguf.tokenizer");
    assertThat(descriptor.exports()).allSatisfy(e -> assertThat(e.isQualified()).isFalse());
    assertThat(descriptor.requires())
        .map(ModuleDescriptor.Requires::name)
        .allSatisfy(name -> assertThat(name).startsWith("java."));
  }
}
