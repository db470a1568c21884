/**
 * The deterministic multi-rank simulator (ARCHITECTURE.md §7): {@link
 * io.kvtier.simulator.MultiRankSimulator} runs R cache replicas as threads on the {@code sim}
 * backend in virtual time, joined by the {@code local} collective and driven by the reference
 * rank loop {@link io.kvtier.core.rank.RankEngine}, and checks after every tick that the replicas
 * and their collective schedules are identical, that the caches hold their invariants, that
 * nothing leaks and that pages loaded back hold the right KV. {@link
 * io.kvtier.simulator.SimulationConfig} describes a run, {@link
 * io.kvtier.simulator.SimulationResult} what it found; the same config gives the same result.
 * {@link io.kvtier.simulator.CacheDefect} and {@link io.kvtier.core.rank.ProtocolDefect} switch
 * deliberately broken rules on, to prove that the simulator catches them.
 */
package io.kvtier.simulator;
