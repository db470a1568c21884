package io.kvtier.route;

import io.kvtier.testkit.ModuleSuite;

/** The descriptor of io.kvtier.route: one exported package, no providers. */
class RouteModuleTest extends ModuleSuite {

  RouteModuleTest() {
    super(KvRouter.class.getModule(), "io.kvtier.route");
  }
}
