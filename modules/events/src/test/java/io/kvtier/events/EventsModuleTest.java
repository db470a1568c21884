package io.kvtier.events;

import io.kvtier.core.cache.CacheEventPublisherProvider;
import io.kvtier.testkit.ModuleSuite;

/** The descriptor of io.kvtier.events: one exported package, the publishers' provider. */
class EventsModuleTest extends ModuleSuite {

  EventsModuleTest() {
    super(KvEvents.class.getModule(), "io.kvtier.events");
    provides(CacheEventPublisherProvider.class, KvEventsProvider.class);
  }
}
