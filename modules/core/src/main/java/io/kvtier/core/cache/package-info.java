/**
 * The per-rank hierarchical radix cache: the paged radix tree over token ids, the device (L1)
 * and host (L2) page pools, eviction and write policies, backups, prepared backups, load-backs
 * and the optional L3 store tier. {@link io.kvtier.core.cache.RankCache} is its API.
 *
 * <p>References such as "CACHE.md §2" or "ARCHITECTURE.md §4" in this module's comments name
 * the sections of {@code docs/CACHE.md} (the algorithms and invariants) and {@code
 * docs/ARCHITECTURE.md} (the replicated-state rules and the tick) in the repository.
 *
 * <h2>A request's way through the cache</h2>
 *
 * <p>{@code admit} matches the prompt (CACHE.md §2), locks the device prefix and may load the
 * host hit back (§10); {@code allocate} (or {@code allocateTokens}, {@code growTo}) gives device
 * pages for the tokens the request computes; {@code cacheChunk} inserts a chunked prefill's
 * progress and moves the lock down; {@code finish} inserts the result (§3) and releases the
 * request, {@code abort} releases it without inserting. Once per scheduler tick the rank
 * protocol commits what every rank has finished copying (§9): {@code sync} on one rank; across
 * ranks, through the cache's {@link io.kvtier.core.cache.CommitPort} ({@code commits()}), one
 * MIN reduction (as {@code io.kvtier.core.rank.CommitSync} does) of {@code
 * readyWritePrefix}, {@code readyLoadPrefix}, {@code readyL3WritePrefix}, one failure flag per
 * pending write ack, load ack and L3 write (-1 where {@code localWriteFailures}, {@code
 * localLoadFailures} or {@code localL3WriteFailures} has it, else 0: the MIN is the OR across
 * ranks) and {@code localPrefetchProgress}, the array sized from {@code pendingWrites}, {@code
 * pendingLoads}, {@code pendingL3Writes} and {@code PREFETCH_SYNC_WIDTH} per pending prefetch;
 * then, in this order, {@code commitLoads(n, failed)}, {@code commitWrites(n, failed)}, {@code
 * commitL3Writes(n, failed)} and {@code commitPrefetches} with the agreed counts and the agreed
 * failures (loads first, so that KV computed on a failed load is untrusted before its backup
 * commits; a backup below a load that is still pending is rolled back, never committed). The
 * forms without a failure set apply this rank's own failures and are for a single rank only (on
 * a cache that a {@code RankEngine} of several ranks drives, they throw). The whole reduction is skipped exactly when {@code outstandingOperations} is 0 (the
 * same answer on every rank).
 *
 * <h2>Prepared backups (CACHE.md §11)</h2>
 *
 * <p>After {@code allocate} and before the forward pass, {@code prepareBackup} reserves host
 * slots for the request's own full pages (all or nothing, evicting host-only leaves if short);
 * {@code streamLayer} copies each layer the model has finished into them. At the request's insert
 * the backup is attached to the tree node that holds exactly its pages if the replicated attach
 * predicate holds (node extent equals the backup's, node not backed up and not {@code PENDING},
 * parent backed up): the node becomes {@code PENDING} and one ack joins the write FIFO, with a
 * catch-up copy of every layer not streamed. Otherwise, and at {@code abort}, it is rolled back;
 * host slots that streamed copies may still write are retired through the write FIFO and freed
 * at that ack's commit. A request has one prepared backup, which may grow until a layer was
 * streamed; a chunked prefill prepares once per chunk.
 *
 * <h2>L3 prefetch (CACHE.md §12)</h2>
 *
 * <p>{@code startPrefetch}, before the admission, qualifies a request whose page-aligned tokens
 * beyond its host hit are at least {@code prefetchThreshold} tokens and whose host hit ends at
 * the root or a committed host copy. The prefetch locks that node, asks the store in the
 * background how many pages it has, and advances only at the sync: the ranks agree on the hit
 * (MIN), reserve host slots, fetch, decide by the policy (MAX of "gave up", MIN of pages
 * fetched) and insert the pages every rank has as host-only nodes. The request is admitted once
 * {@code prefetchState} says {@code DONE}, and its admission loads the pages back like any host
 * hit.
 *
 * <h2>The rule: replicated and rank-local state are different types</h2>
 *
 * <p>Several ranks run the same cache and must take identical decisions, or one of them waits
 * in a collective forever (ARCHITECTURE.md §4). So every decision that changes the tree, a pool or
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
 *       {@code LocalProgress} (L3 work in {@code L3Progress}). The replicated side holds them
 *       only as write-only sinks ({@code CopySink}, {@code L3Sink}: start work, file it under an
 *       ack; nothing comes back), so the tree, the evictor, the controllers and the attach
 *       predicate have no reference through which they could read completion. Only {@code
 *       CommitProtocol} and {@code L3Room} hold them as such, and their exits are the ready-prefix
 *       counts, local failure sets and prefetch values that the rank protocol reduces across ranks
 *       (MIN, OR) before handing them back to the commit calls, and the model thread's layer
 *       waits, which decide nothing.
 * </ul>
 *
 * <p>Pool frees happen at replicated points only; slots that a running copy may still write (a
 * prepared backup rolled back after streaming) are retired through the write FIFO and freed at
 * its commit. The logical clock, never the wall clock, orders eviction. The package {@code
 * io.kvtier.core.cache.testing} holds deliberately broken variants of these rules for the
 * simulator's regression proofs.
 *
 * <h2>The rooms</h2>
 *
 * <p>One package, because the rooms share the tree's node fields package-privately and none of
 * them is API; each room owns its state and gets its collaborators by constructor, built bottom-up
 * by {@code RankCache}, and no lower room calls a higher one (a hit reaches the write triggers
 * through the {@code HitListener} the caller passes in). From the bottom:
 *
 * <table>
 *   <caption>Rooms of the cache, lowest first</caption>
 *   <tr><th>room</th><th>classes</th><th>owns</th></tr>
 *   <tr><td>keys and nodes</td><td>{@code RadixNode}, {@code ChildMaps}, {@code ChunkStore},
 *       {@code KeyCopy}, {@code LongMap}, {@code PageHasher}, {@code SlotRuns}</td>
 *       <td>a node's fields, token storage, child maps, page hashes, slot runs</td></tr>
 *   <tr><td>pools</td><td>{@code PoolLedger}, {@code PageAllocator}</td>
 *       <td>the allocators and the per-pool accounting (I5)</td></tr>
 *   <tr><td>tree</td><td>{@code CacheTree}, {@code TreeWalk}, {@code TreeInsert}, {@code
 *       InsertResult}, {@code EvictionHeap}, {@code HitListener}, {@code CacheEvents}</td>
 *       <td>split, lock, remove, candidacy; the match's walk ({@code TreeWalk}) and a request's
 *       insert and path hits ({@code TreeInsert}); the caller owns the result holders; the
 *       KV-event hook the rooms call at their replicated decisions</td></tr>
 *   <tr><td>eviction</td><td>{@code Evictor}</td><td>policy order, host eviction</td></tr>
 *   <tr><td>L3</td><td>{@code L3Port} ({@code L3Room}, {@code NoL3}), {@code L3Tier} ({@code
 *       L3Writes}, {@code L3Prefetches}), {@code L3Progress}, {@code L3Write}, {@code
 *       Prefetch}, {@code L3Executor}</td>
 *       <td>the L3 write FIFO, prefetches and their rank-local progress</td></tr>
 *   <tr><td>backups and loads</td><td>{@code Backups}, {@code WriteAck}, {@code LoadBacks},
 *       {@code LoadBack}, {@code CopySink}</td>
 *       <td>the write FIFO (backups, write-back device eviction) and the load
 *       FIFO</td></tr>
 *   <tr><td>write triggers</td><td>{@code WriteTriggers}</td>
 *       <td>write-through and L3 writes on hits, held back while a prepared backup
 *       resolves</td></tr>
 *   <tr><td>prepared backups</td><td>{@code PreparedBackups}, {@code PreparedBackup}, {@code
 *       AttachPredicate}, {@code ReplicatedNodeView}</td>
 *       <td>reservation, streaming, attach</td></tr>
 *   <tr><td>match</td><td>{@code PrefixMatcher}</td>
 *       <td>token checks, the walk and scan holders, what is cached where</td></tr>
 *   <tr><td>requests</td><td>{@code RequestTable}, {@code RequestState}, {@code SnapshotPort}
 *       ({@code RequestSnapshots}, {@code NoSnapshots})</td>
 *       <td>admission, allocation, finish, chunk and abort (one release path); the requests'
 *       recurrent-state snapshots behind the port</td></tr>
 *   <tr><td>locks</td><td>{@code NodeLocks}, {@link io.kvtier.core.cache.CacheLock}</td>
 *       <td>explicit node locks</td></tr>
 *   <tr><td>commit protocol</td><td>{@code CommitProtocol}, {@code LocalProgress}, {@link
 *       io.kvtier.core.cache.CommitPort} ({@code CommitHandshake})</td>
 *       <td>the rank-local copy progress and the commits; the port the sync step drives</td></tr>
 *   <tr><td>checks</td><td>{@code ReplicaDigest}, {@code CacheInvariants} (one class per
 *       family of rules on one {@code SlotTally}: {@code QueueMembership}, {@code
 *       TreeInvariants}, {@code ChangedInvariants}, {@code NodeInvariants}, {@code
 *       SnapshotInvariants}, {@code RequestInvariants}, {@code QueueInvariants}, {@code
 *       PoolInvariants}, {@code IdleInvariants}), {@code ChangedNodes}, {@code
 *       RuleVariants}</td><td>the divergence digest, invariants, the nodes changed since they
 *       last looked, broken variants for tests</td></tr>
 * </table>
 */
package io.kvtier.core.cache;
