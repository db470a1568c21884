package io.kvtier.core.cache;

import java.util.Optional;

/**
 * The rooms of one {@link RankCache}, for the code that inspects them as a whole: the replica
 * digest, the invariant checks, the test hooks and the package's tests. Built once with the
 * cache; the cache itself calls its rooms through its own fields.
 */
record Rooms(
    CacheTree tree,
    PoolLedger ledger,
    Backups backups,
    LoadBacks loadBacks,
    Evictor evictor,
    RequestTable table,
    NodeLocks nodeLocks,
    Optional<KvMemory> memory,
    RuleVariants rules,
    CommitProtocol protocol,
    PreparedBackups preparedBackups,
    L3Port l3Port) {

  /** The active requests by id. */
  LongMap<RequestState> requests() {
    return table.states();
  }

  /** The explicit node locks by serial. */
  LongMap<CacheLock> locks() {
    return nodeLocks.all();
  }

  /** The rank-local copy progress. */
  LocalProgress localProgress() {
    return protocol.progress();
  }

  /** The L3 tier's controller and progress; empty without an L3 tier. */
  Optional<L3Room> l3() {
    return l3Port.room();
  }
}
