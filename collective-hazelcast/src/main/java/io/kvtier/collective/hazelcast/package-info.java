/**
 * The Hazelcast backend: the {@code hazelcast} collective ({@link
 * io.kvtier.collective.hazelcast.HazelcastCollectiveProvider}, rank agreement on the CP
 * subsystem of Hazelcast 5.4.0, the last release whose CP subsystem is free), the {@code
 * hazelcast} L3 store ({@link io.kvtier.collective.hazelcast.HazelcastKvStoreProvider}, a
 * cluster-wide {@code IMap} of pages), their shared configuration ({@link
 * io.kvtier.collective.hazelcast.HazelcastConfig}, namespace {@code hazelcast.}), a plain CP
 * member to run beside the ranks ({@link io.kvtier.collective.hazelcast.HazelcastCpMemberMain}),
 * and rank groups on an instance the caller runs ({@link
 * io.kvtier.collective.hazelcast.HazelcastCollectives}).
 */
package io.kvtier.collective.hazelcast;
