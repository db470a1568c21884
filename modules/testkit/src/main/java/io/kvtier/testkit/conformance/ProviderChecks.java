package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.ProviderName;

/** Checks common to providers of every SPI. */
final class ProviderChecks {

  private ProviderChecks() {}

  static void assertNamedAsAnnotated(KvTierProvider provider) {
    ProviderName annotation = provider.getClass().getAnnotation(ProviderName.class);
    assertThat(annotation)
        .as(
            "%s must carry @ProviderName so that it can be selected without instantiation",
            provider.getClass().getName())
        .isNotNull();
    assertThat(provider.name())
        .as("name() of %s", provider.getClass().getName())
        .isEqualTo(annotation.value())
        .matches("[a-z0-9-]+");
    assertThat(provider.configNamespace())
        .as("configNamespace() of %s", provider.getClass().getName())
        .isNotBlank()
        .doesNotEndWith(".");
    assertThat(provider.availability()).as("availability() never returns null").isNotNull();
  }
}
