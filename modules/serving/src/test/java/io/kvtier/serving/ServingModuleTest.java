package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.CacheEventPublisherProvider;
import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor.Requires;
import org.junit.jupiter.api.Test;

/**
 * The descriptor of io.kvtier.serving: one exported package, and none of the command line, the
 * HTTP server, the metrics library or a model among what it reads.
 */
class ServingModuleTest extends ModuleSuite {

  ServingModuleTest() {
    super(ServingModel.class.getModule(), "io.kvtier.serving");
  }

  @Test
  void requiresTheEngineAndNothingAboveIt() {
    assertThat(module().getDescriptor().requires().stream().map(Requires::name))
        .contains("io.kvtier.core")
        .noneMatch(
            name ->
                name.startsWith("io.kvtier.cli")
                    || name.startsWith("io.kvtier.model")
                    || name.equals("io.kvtier.server")
                    || name.equals("io.kvtier.metrics")
                    || name.equals("io.kvtier.events")
                    || name.startsWith("com.hazelcast")
                    || name.startsWith("org.zeromq")
                    || name.startsWith("info.picocli")
                    || name.startsWith("org.eclipse.jetty")
                    || name.startsWith("micrometer"));
    assertThat(module().getDescriptor().uses())
        .containsExactlyInAnyOrder(
            ModelProvider.class.getName(), CacheEventPublisherProvider.class.getName());
  }
}
