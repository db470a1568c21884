package io.kvtier.events;

/**
 * What a {@link KvEventStream} has done so far.
 *
 * @param sealed batches sealed (sequence numbers given out)
 * @param published batches handed to the sink
 * @param droppedBatches batches dropped because the buffer was full: their sequence numbers are
 *     gaps no replay fills
 * @param droppedEvents the events in those batches
 * @param failedSends batches whose send failed (logged); also gaps
 */
public record KvEventStats(
    long sealed, long published, long droppedBatches, long droppedEvents, long failedSends) {}
