package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleDescriptor.Requires;
import org.junit.jupiter.api.Test;

/** The descriptor of {@code io.kvtier.cli}. */
class ExamplesModuleTest {

  @Test
  void exportsOnlyItsPackageAndOpensItToPicocliOnly() {
    Module module = KvTierCli.class.getModule();
    assertThat(module.isNamed()).as("tests run on the module path").isTrue();
    ModuleDescriptor descriptor = module.getDescriptor();

    assertThat(descriptor.exports())
        .singleElement()
        .satisfies(e -> {
          assertThat(e.source()).isEqualTo("io.kvtier.cli");
          assertThat(e.isQualified()).isFalse();
        });
    assertThat(descriptor.opens())
        .singleElement()
        .satisfies(o -> assertThat(o.targets()).containsExactly("info.picocli"));
    assertThat(descriptor.requires().stream().map(Requires::name))
        .contains("io.kvtier.core", "info.picocli");
  }
}
