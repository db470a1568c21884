package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import org.junit.jupiter.api.Test;

/** io.kvtier.model.llama exports its one package and needs only kvtier-gguf and the JDK. */
class LlamaModuleTest {
  private final Module module = LlamaModel.class.getModule();

  @Test
  void exportsOnePackageAndRequiresOnlyGgufAndTheJdk() {
    assertThat(module.isNamed()).as("tests run on the module path").isTrue();
    ModuleDescriptor descriptor = module.getDescriptor();
    assertThat(descriptor.name()).isEqualTo("io.kvtier.model.llama");
    assertThat(descriptor.exports())
        .map(ModuleDescriptor.Exports::source)
        .containsExactly("io.kvtier.model.llama");
    assertThat(descriptor.requires())
        .map(ModuleDescriptor.Requires::name)
        .allSatisfy(
            name ->
                assertThat(
                        name.startsWith("java.")
                            || name.equals("jdk.incubator.vector")
                            || name.equals("io.kvtier.gguf"))
                    .as(name)
                    .isTrue());
  }
}
