package io.kvtier.route;

import com.hazelcast.ringbuffer.ReadResultSet;
import com.hazelcast.ringbuffer.Ringbuffer;
import com.hazelcast.ringbuffer.StaleSequenceException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Follows one replica's KV events in a Hazelcast ringbuffer ({@code kvtier.events.publisher=
 * hazelcast}: each item the 8-byte batch sequence and the msgpack batch, docs/EVENTS.md) into the
 * index, from the oldest item the ringbuffer still holds. Every router that reads the same
 * ringbuffers applies the same batches in the same order, so their indexes agree: this is how
 * several routers share one index. A batch sequence that jumps ahead (batches the replica dropped
 * before publishing) or items overwritten before they were read forget the replica's blocks, as a
 * gap the ZeroMQ replay cannot fill does; a sequence that falls back is the replica's new life,
 * whose first batch clears its blocks.
 */
final class HazelcastReplicaEvents extends ReplicaEventSource {
  private static final System.Logger LOG = System.getLogger(HazelcastReplicaEvents.class.getName());
  private static final int MAX_ITEMS = 256;
  private static final long POLL_MS = 100;

  private final Ringbuffer<byte[]> ringbuffer;

  HazelcastReplicaEvents(int replica, Ringbuffer<byte[]> ringbuffer, PrefixIndex index) {
    super(replica, index);
    this.ringbuffer = ringbuffer;
    start("kvtier-route-hazelcast-");
  }

  @Override
  void follow() {
    long read = -1;
    long expected = -1;
    CompletableFuture<ReadResultSet<byte[]>> pending = null;
    while (running()) {
      try {
        if (paused()) {
          index.clear(replica); // again here: a batch applied as the router forgot the replica
          pending = null;
          pause();
          continue;
        }
        if (takeResume() || read < 0) {
          index.clear(replica);
          read = ringbuffer.headSequence();
          expected = -1;
          pending = null;
        }
        if (pending == null) {
          pending = ringbuffer.readManyAsync(read, 1, MAX_ITEMS, null).toCompletableFuture();
        }
        ReadResultSet<byte[]> items;
        try {
          items = pending.get(POLL_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          continue; // nothing new yet; the read stays pending
        }
        pending = null;
        for (byte[] item : items) {
          long sequence = ByteBuffer.wrap(item, 0, 8).getLong();
          if (expected >= 0 && sequence > expected) {
            index.clear(replica); // batches dropped before they were published
          }
          EventBatches.apply(Arrays.copyOfRange(item, 8, item.length), replica, index);
          countApplied();
          expected = sequence + 1;
        }
        read = items.getNextSequenceToReadFrom();
      } catch (ExecutionException e) {
        pending = null;
        if (e.getCause() instanceof StaleSequenceException) {
          read = -1; // overwritten before it was read: what we knew may be wrong
        } else if (running()) {
          LOG.log(System.Logger.Level.WARNING, "events of replica " + replica, e.getCause());
          pause();
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        // The cluster is away (a client reconnecting): try again.
        pending = null;
        if (running()) {
          LOG.log(System.Logger.Level.WARNING, "events of replica " + replica + ": " + e);
          pause();
        }
      }
    }
  }

  private static void pause() {
    try {
      Thread.sleep(POLL_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
