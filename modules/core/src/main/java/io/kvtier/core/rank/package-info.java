/**
 * The rank protocol: the only code that calls the collective. {@link
 * io.kvtier.core.rank.RankEngine} is the reference rank loop of ARCHITECTURE.md §6 (receive, sync,
 * admit, forward, finish, check), for the simulator, the examples and servers that embed kvtier;
 * the per-tick reduction runs iff the replicated count of outstanding operations is positive.
 * Guards turn a broken replicated-state rule into an exception naming ranks and call sites
 * instead of a hang: {@link io.kvtier.core.rank.GuardedCollective} (tags and sequence numbers over
 * any collective), {@link io.kvtier.core.rank.RecordingCollective} (the call log whose hash the
 * ranks compare) and the replica digest check ({@link
 * io.kvtier.core.rank.ReplicaDivergenceException}).
 */
package io.kvtier.core.rank;
