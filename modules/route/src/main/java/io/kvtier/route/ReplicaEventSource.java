package io.kvtier.route;

/** A replica's KV events, followed into the index on a thread of its own. */
interface ReplicaEventSource extends AutoCloseable {
  /** Batches applied so far. */
  long applied();

  /**
   * The router found the replica dead: forgets its blocks and where its stream stood, and
   * applies nothing more until {@link #resume}, so that the index holds nothing of a replica
   * out of rotation.
   */
  void forget();

  /**
   * The replica answers again: reads what the transport still holds of its stream from the
   * start (a restarted replica's new stream begins at sequence 0 with AllBlocksCleared).
   */
  void resume();

  @Override
  void close();
}
