package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.serving.ModelProvider;
import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor;
import org.junit.jupiter.api.Test;

/**
 * io.kvtier.model.llama exports its one package, provides the serving engine's model {@code
 * gguf}, and needs only kvtier-gguf (its one weight reader), the serving engine and the JDK.
 */
class LlamaModuleTest extends ModuleSuite {

  LlamaModuleTest() {
    super(LlamaModel.class.getModule(), "io.kvtier.model.llama");
    provides(ModelProvider.class, GgufModelProvider.class);
  }

  @Test
  void requiresOnlyGgufItsTextTheServingEngineAndTheJdk() {
    ModuleDescriptor descriptor = module().getDescriptor();
    assertThat(descriptor.name()).isEqualTo("io.kvtier.model.llama");
    assertThat(descriptor.requires())
        .map(ModuleDescriptor.Requires::name)
        .allSatisfy(
            name ->
                assertThat(
                        name.startsWith("java.")
                            || name.equals("jdk.incubator.vector")
                            || name.equals("io.kvtier.gguf")
                            || name.equals("io.kvtier.gguf.text")
                            || name.equals("io.kvtier.serving"))
                    .as(name)
                    .isTrue());
  }
}
