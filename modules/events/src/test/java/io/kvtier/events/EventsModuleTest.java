package io.kvtier.events;

import io.kvtier.testkit.ModuleSuite;

/** The descriptor of io.kvtier.events: one exported package, no providers. */
class EventsModuleTest extends ModuleSuite {

  EventsModuleTest() {
    super(KvEvents.class.getModule(), "io.kvtier.events");
  }
}
