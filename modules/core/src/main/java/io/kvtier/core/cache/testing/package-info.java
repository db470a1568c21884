/**
 * Test-only hooks of the cache, exported to {@code io.kvtier.testkit} alone: deliberately broken
 * variants of the replicated-decision rules, used to prove that the multi-rank simulator catches
 * each defect class as an exception instead of a hang.
 */
package io.kvtier.core.cache.testing;
