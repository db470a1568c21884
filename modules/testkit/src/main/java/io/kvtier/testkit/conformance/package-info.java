/** Abstract JUnit 5 conformance suites, one per SPI; a provider module runs one by subclassing. */
package io.kvtier.testkit.conformance;
