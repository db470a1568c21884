/**
 * The per-rank hierarchical radix cache: the paged radix tree over token ids, the device (L1)
 * and host (L2) page pools, eviction and write policies, backups, prepared backups and
 * load-backs.
 *
 * <h2>The rule: replicated and rank-local state are different types</h2>
 *
 * <p>Several ranks run the same cache and must take identical decisions, or one of them waits
 * in a collective forever (ARCHITECTURE §4). So every decision that changes the tree, a pool or
 * which collective runs next (match truncation, split guards, prune and eviction candidacy, the
 * prepared-backup attach predicate, hit counting and write-through triggers, load-back sizing,
 * the outstanding-operations test) reads <em>replicated</em> state only, and the types make sure
 * it cannot read anything else:
 *
 * <ul>
 *   <li>Replicated: {@code RadixNode}, {@code CacheTree}, the write and load FIFOs of {@code
 *       WriteAck} and {@link io.kvtier.core.cache.LoadBack}, {@code PreparedBackup}, request
 *       state, locks, the logical clock, pool accounting, {@link io.kvtier.core.cache.CacheStats}.
 *       None of these holds or reaches a copy handle. The attach predicate is a function of
 *       {@code ReplicatedNodeView} and {@code PreparedBackup}.
 *   <li>Rank-local: the transfer engine and every {@link io.kvtier.spi.TransferHandle} live in
 *       {@code LocalProgress}. The replicated side holds it only as a write-only {@code
 *       CopySink} (start copies, file them under an ack; nothing comes back), so the tree, the
 *       evictor, the controller and the attach predicate have no reference through which they
 *       could read completion. Only {@code RankCache} holds it as such, and its exits are the
 *       ready-prefix counts and local failure sets that the rank protocol reduces across ranks
 *       (MIN, OR) before handing them back to the commit calls, and the model thread's layer
 *       waits, which decide nothing.
 * </ul>
 *
 * <p>Pool frees happen at replicated points only; slots that a running copy may still write (a
 * prepared backup rolled back after streaming) are retired through the write FIFO and freed at
 * its commit. The logical clock, never the wall clock, orders eviction. The package {@code
 * io.kvtier.core.cache.testing} holds deliberately broken variants of these rules for the
 * simulator's regression proofs.
 */
package io.kvtier.core.cache;
