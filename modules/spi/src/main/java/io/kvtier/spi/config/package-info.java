/**
 * Reading typed configurations from namespaced properties ({@code kvtier.}, {@code sim.}, {@code
 * cuda.}, {@code hazelcast.}, {@code mpi.}, ...), written once for the engine and every backend.
 *
 * <p>A typed config reads its keys through a {@link io.kvtier.spi.config.ConfigReader}: typed
 * getters with defaults, units for sizes, rates and durations, range checks, and at the end an
 * unknown-key check that suggests the closest known key. {@link
 * io.kvtier.spi.config.ConfigValues} holds the parsing and printing of single values, and a
 * {@link io.kvtier.spi.config.ConfigParser} ties a namespace to the code that reads it, which is
 * what the testkit's {@code ConfigAssertions} check.
 */
package io.kvtier.spi.config;
