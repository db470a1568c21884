package io.kvtier.core.inject;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.Key;
import com.google.inject.ProvisionException;
import com.google.inject.TypeLiteral;
import io.kvtier.core.KvTierBackends;
import io.kvtier.core.SelectedProviders;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.discovery.ProviderNotFoundException;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.TransferEngine;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class KvTierModuleTest {

  private static final KvTierConfig CONFIG =
      KvTierConfig.builder().device("sim").host("sim").devicePages(8).hostRatio(1.5).build();

  @Test
  void theInjectorBuildsOnTheSimulatedBackend() {
    Injector injector = Guice.createInjector(new KvTierModule(CONFIG));

    try (KvTierBackends backends = injector.getInstance(KvTierBackends.class)) {
      assertThat(injector.getInstance(KvTierConfig.class)).isSameAs(CONFIG);
      assertThat(injector.getInstance(CacheConfig.class)).isEqualTo(CONFIG.cache());
      assertThat(injector.getInstance(KvLayout.class)).isEqualTo(CONFIG.layout());
      assertThat(injector.getInstance(DeviceMemory.class)).isSameAs(backends.device());
      assertThat(injector.getInstance(HostMemory.class)).isSameAs(backends.host());
      assertThat(injector.getInstance(TransferEngine.class)).isSameAs(backends.transfers());
      assertThat(injector.getInstance(KvTierBackends.class)).as("singleton").isSameAs(backends);
      assertThat(injector.getInstance(SelectedProviders.class)).isSameAs(backends.providers());
      assertThat(injector.getInstance(DeviceMemoryProvider.class).name()).isEqualTo("sim");
      assertThat(injector.getInstance(HostMemoryProvider.class).name()).isEqualTo("sim");
      assertThat(injector.getInstance(CollectiveProvider.class).name()).isEqualTo("local");
      assertThat(injector.getInstance(Key.get(new TypeLiteral<Optional<KvStoreProvider>>() {})))
          .isEmpty();
      assertThat(backends.device().spec()).isEqualTo(CONFIG.devicePool());
      assertThat(backends.host().spec().pages()).isEqualTo(12);
    }
  }

  @Test
  void theGuiceFreePathGivesTheSameObjects() {
    Injector injector = Guice.createInjector(new KvTierModule(CONFIG));
    try (KvTierBackends viaGuice = injector.getInstance(KvTierBackends.class);
        KvTierBackends plain = KvTierBackends.open(CONFIG)) {
      assertThat(plain.config()).isEqualTo(viaGuice.config());
      assertThat(plain.rank()).isEqualTo(viaGuice.rank());
      assertThat(plain.providers().device().getClass())
          .isEqualTo(viaGuice.providers().device().getClass());
      assertThat(plain.providers().host().getClass())
          .isEqualTo(viaGuice.providers().host().getClass());
      assertThat(plain.providers().collective().getClass())
          .isEqualTo(viaGuice.providers().collective().getClass());
      assertThat(plain.providers().store()).isEqualTo(viaGuice.providers().store());
      assertThat(plain.device().getClass()).isEqualTo(viaGuice.device().getClass());
      assertThat(plain.device().spec()).isEqualTo(viaGuice.device().spec());
      assertThat(plain.host().getClass()).isEqualTo(viaGuice.host().getClass());
      assertThat(plain.host().spec()).isEqualTo(viaGuice.host().spec());
      assertThat(plain.transfers().getClass()).isEqualTo(viaGuice.transfers().getClass());
      assertThat(plain.device()).isNotSameAs(viaGuice.device());
    }
  }

  @Test
  void aMissingProviderFailsWhenTheBackendsAreFirstNeeded() {
    Injector injector =
        Guice.createInjector(new KvTierModule(KvTierConfig.builder().device("cuda").build()));

    assertThatThrownBy(() -> injector.getInstance(DeviceMemory.class))
        .isInstanceOf(ProvisionException.class)
        .hasRootCauseInstanceOf(ProviderNotFoundException.class)
        .rootCause()
        .hasMessageContaining("kvtier-backend-cuda");
  }

  @Test
  void theRankMustBeInTheGroup() {
    assertThatThrownBy(
            () ->
                new KvTierModule(CONFIG, io.kvtier.core.discovery.ProviderRegistries.discover(), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rank=1 is outside the group of kvtier.ranks=1");
  }
}
