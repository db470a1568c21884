package io.kvtier.route;

import io.kvtier.events.ZmqKvEventSink;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Optional;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Follows one replica's KV events (vLLM's ZeroMQ protocol, docs/EVENTS.md) into the index, on a
 * thread of its own: applies batches in sequence order; on a gap asks the replay socket for the
 * missing batches, and if they are not all there forgets the replica's blocks (its picture would
 * be wrong) and goes on from the batch at hand.
 */
final class ReplicaEvents extends ReplicaEventSource {
  private static final System.Logger LOG = System.getLogger(ReplicaEvents.class.getName());
  private static final int POLL_MS = 50;
  private static final long CATCH_UP_NANOS = 500_000_000L;

  private final String endpoint;
  private final Optional<String> replayEndpoint;
  private long next;
  // Batch 0 of the stream followed, to tell a replica's restart from a duplicate of it.
  private byte[] first;
  private volatile long forgotten;

  ReplicaEvents(int replica, String endpoint, Optional<String> replayEndpoint, PrefixIndex index) {
    super(replica, index);
    this.endpoint = endpoint;
    this.replayEndpoint = replayEndpoint;
    start("kvtier-route-events-");
  }

  /** Times this replica's blocks were forgotten for a gap that replay did not fill. */
  long forgotten() {
    return forgotten;
  }

  @Override
  void follow() {
    try (ZContext context = new ZContext(1)) {
      ZMQ.Socket sub = context.createSocket(SocketType.SUB);
      sub.setLinger(0);
      // A stalled JeroMQ handshake fails and reconnects (ZmqKvEventSink.HANDSHAKE_MS says why).
      sub.setHandshakeIvl(ZmqKvEventSink.HANDSHAKE_MS);
      sub.connect(endpoint);
      sub.subscribe(new byte[0]);
      sub.setReceiveTimeOut(POLL_MS);
      // What was published before this subscription (a router that starts after its replicas).
      catchUp(context);
      long quietSince = System.nanoTime();
      while (running()) {
        if (takeResume()) {
          // Without the reset a restarted replica's new sequence numbers, below the old ones,
          // would read as duplicates.
          next = 0;
          first = null;
          index.clear(replica);
          catchUp(context);
          quietSince = System.nanoTime();
        }
        byte[] topic = sub.recv(0);
        if (paused()) {
          // Again on this thread: a batch being applied as the router forgot the replica.
          index.clear(replica);
          while (topic != null && sub.hasReceiveMore()) {
            topic = sub.recv(0); // the rest of a message not to apply
          }
          continue;
        }
        if (topic == null || !sub.hasReceiveMore()) {
          // PUB loses what it sends before a subscription arrives and past a high-water mark,
          // and a lost last batch shows no gap until the next: ask the replay socket when quiet.
          if (System.nanoTime() - quietSince > CATCH_UP_NANOS) {
            catchUp(context);
            quietSince = System.nanoTime();
          }
          continue;
        }
        quietSince = System.nanoTime();
        byte[] seq = sub.recv(0);
        byte[] payload = sub.hasReceiveMore() ? sub.recv(0) : null;
        if (seq == null || seq.length != 8 || payload == null) {
          continue;
        }
        long sequence = ByteBuffer.wrap(seq).getLong();
        if (sequence < next) {
          if (sequence != 0 || Arrays.equals(payload, first)) {
            continue; // applied already, from a replay
          }
          // The replica restarted: its stream begins again at 0 with AllBlocksCleared.
          next = 0;
        }
        if (sequence > next) {
          catchUp(context);
        }
        if (sequence > next) {
          // The replay does not reach back: what we knew of this replica may be wrong.
          index.clear(replica);
          forgotten++;
          next = sequence;
        }
        if (sequence == next) {
          apply(payload);
          next = sequence + 1;
        }
      }
    } catch (RuntimeException e) {
      if (running()) {
        LOG.log(System.Logger.Level.WARNING, "events of replica " + replica + " stopped", e);
      }
    }
  }

  /**
   * Applies the replay socket's batches from {@code next} on, in order; if its oldest batch is
   * past {@code next}, what lies between is lost: forgets the replica's blocks first.
   */
  private void catchUp(ZContext context) {
    if (replayEndpoint.isEmpty()) {
      return;
    }
    ZMQ.Socket dealer = context.createSocket(SocketType.DEALER);
    try {
      dealer.setLinger(0);
      dealer.setHandshakeIvl(ZmqKvEventSink.HANDSHAKE_MS);
      dealer.setReceiveTimeOut(2_000);
      dealer.connect(replayEndpoint.get());
      dealer.sendMore(new byte[0]);
      dealer.send(ByteBuffer.allocate(8).putLong(next).array(), 0);
      while (true) {
        byte[] delimiter = dealer.recv(0);
        if (delimiter == null) {
          return;
        }
        long s = ByteBuffer.wrap(dealer.recv(0)).getLong();
        byte[] payload = dealer.recv(0);
        if (s == -1) {
          return;
        }
        if (s > next) {
          index.clear(replica);
          forgotten++;
          next = s;
        }
        if (s == next) {
          apply(payload);
          next = s + 1;
        }
      }
    } finally {
      context.destroySocket(dealer);
    }
  }

  /** Applies one EventBatch; an unreadable one forgets the replica's blocks. */
  void apply(byte[] payload) {
    if (next == 0) {
      first = payload;
    }
    if (EventBatches.apply(payload, replica, index)) {
      countApplied();
    } else {
      forgotten++;
    }
  }
}
