/**
 * {@code kvtier replay}: what-if replays of a workload through the engine's own cache ({@link
 * io.kvtier.core.cache.RankCache}, one rank, no collective, pools without bytes) over a sweep of
 * capacities and policies, with the hit rate each tier gives and the baselines "unbounded" and
 * "no cache". {@link io.kvtier.simulator.replay.Replay#run} runs a sweep; {@link
 * io.kvtier.simulator.replay.ReplayFormat} writes its table, CSV and JSON. Requests run one at a
 * time in arrival order: arrival times are order only.
 */
package io.kvtier.simulator.replay;
