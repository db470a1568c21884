/** Conformance suites and test utilities. */
package io.kvtier.testkit;
