package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.testkit.ModuleSuite;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.collective.hazelcast: the collective and the store. */
class HazelcastModuleTest extends ModuleSuite {

  HazelcastModuleTest() {
    super(HazelcastCollectiveProvider.class.getModule(), "io.kvtier.collective.hazelcast");
    provides(CollectiveProvider.class, HazelcastCollectiveProvider.class);
    provides(KvStoreProvider.class, HazelcastKvStoreProvider.class);
  }

  @Test
  void bothProvidersAreAvailableWithHazelcast540() {
    assertThat(new HazelcastCollectiveProvider().availability().available()).isTrue();
    assertThat(new HazelcastKvStoreProvider().availability().reason()).contains("5.4.0");
  }
}
