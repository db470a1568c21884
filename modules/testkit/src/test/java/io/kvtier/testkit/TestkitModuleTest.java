package io.kvtier.testkit;

/** The descriptor of io.kvtier.testkit: three packages, no providers. */
class TestkitModuleTest extends ModuleSuite {
  TestkitModuleTest() {
    super(
        ModuleSuite.class.getModule(),
        "io.kvtier.testkit",
        "io.kvtier.testkit.conformance",
        "io.kvtier.testkit.config");
  }
}
