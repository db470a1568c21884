package io.kvtier.events;

import io.kvtier.core.cache.CacheEvent;
import java.util.List;
import java.util.Objects;

/**
 * One batch of KV events as a publisher sends it: vLLM's {@code EventBatch} with its sequence
 * number.
 *
 * @param sequence the batch's number; consecutive batches of one stream have consecutive numbers,
 *     and a number skipped is a batch dropped (see {@link KvEventStream})
 * @param timestamp seconds since the epoch when the batch was sealed
 * @param cleared whether an {@code AllBlocksCleared} event comes first: the first batch of a
 *     stream has it, so that a subscriber that knew an earlier life of this replica forgets it
 * @param events the cache's events, in the order the cache decided them
 */
public record KvEventBatch(
    long sequence, double timestamp, boolean cleared, List<CacheEvent> events) {

  /** Validates the fields and copies the list. */
  public KvEventBatch {
    if (sequence < 0) {
      throw new IllegalArgumentException("sequence=" + sequence + " must be >= 0");
    }
    events = List.copyOf(Objects.requireNonNull(events, "events"));
  }

  /**
   * The number of events on the wire: the cache's, and the {@code AllBlocksCleared} if any.
   *
   * @return the count
   */
  public int size() {
    return events.size() + (cleared ? 1 : 0);
  }
}
