/**
 * Reproducible request workloads: the fixed benchmark traces, generators and trace readers.
 *
 * <p>Entry points: {@link io.kvtier.simulator.workload.Workloads#parse(String)} turns a spec
 * such as {@code shared-prefix:groups=64,alpha=1.0}, {@code multiturn}, {@code doc-qa}, {@code
 * fixed:multiturn}, {@code jsonl:<path>} or {@code mooncake:<path>} into a {@link
 * io.kvtier.simulator.workload.Workload}, a stream of {@link
 * io.kvtier.simulator.workload.Request}s; {@link io.kvtier.simulator.workload.FixedTraces}
 * generates the two fixed traces of WORKLOADS.md bit for bit; {@link
 * io.kvtier.simulator.workload.TraceJsonl} and {@link io.kvtier.simulator.workload.BlockHashTrace}
 * read and write the two trace file formats. All randomness comes from {@link
 * io.kvtier.simulator.workload.SplitMix64}, so a spec and its seed fix every token.
 */
package io.kvtier.simulator.workload;
