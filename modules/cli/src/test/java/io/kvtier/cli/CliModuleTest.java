package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor.Requires;
import org.junit.jupiter.api.Test;

/** The descriptor of {@code io.kvtier.cli}: one package, opened to picocli only. */
class CliModuleTest extends ModuleSuite {

  CliModuleTest() {
    super(KvTierCli.class.getModule(), "io.kvtier.cli");
  }

  @Test
  void opensItsPackageToPicocliOnlyAndRequiresNoTestLibrary() {
    assertThat(module().getDescriptor().opens())
        .singleElement()
        .satisfies(o -> assertThat(o.targets()).containsExactly("info.picocli"));
    assertThat(module().getDescriptor().requires().stream().map(Requires::name))
        .contains("io.kvtier.core", "io.kvtier.simulator", "info.picocli")
        .noneMatch(
            name ->
                name.startsWith("org.junit")
                    || name.startsWith("org.assertj")
                    || name.equals("io.kvtier.testkit"));
  }
}
