package io.kvtier.events;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.Optional;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

/**
 * vLLM's ZeroMQ publisher protocol: a PUB socket sends each batch as three frames {@code (topic,
 * 8-byte big-endian sequence, payload)}; an optional ROUTER socket answers a request {@code
 * (identity, "", 8-byte start sequence)} with one message {@code (identity, "", sequence,
 * payload)} per kept batch from that sequence on, then {@code (identity, "", -1, "")}.
 *
 * <p>PUB never blocks: a subscriber slower than its high-water mark loses messages, which it sees
 * as a sequence gap and asks the replay socket for. The sockets are created here, so that a bad
 * or busy address fails at open, and then used by the stream's publisher thread only.
 */
public final class ZmqKvEventSink implements KvEventSink {
  private static final byte[] END = ByteBuffer.allocate(8).putLong(-1).array();
  private static final int HWM = 100_000;

  private final ZContext context;
  private final ZMQ.Socket pub;
  private final Optional<ZMQ.Socket> replay;
  private final byte[] topic;
  private final int replaySize;
  private final ArrayDeque<Kept> kept = new ArrayDeque<>();
  private final String endpoint;
  private final Optional<String> replayEndpoint;

  private record Kept(long sequence, byte[] payload) {}

  /**
   * Opens the sockets.
   *
   * @param endpoint the PUB address: bound if it holds {@code *} or {@code ::} or is {@code
   *     ipc://} or {@code inproc://}, else connected (to a proxy)
   * @param replayEndpoint the ROUTER address, always bound; empty for none
   * @param topic the first frame of every message
   * @param replaySize batches kept for replay
   * @throws IllegalArgumentException if an address cannot be bound or connected, naming it
   */
  public ZmqKvEventSink(
      String endpoint, Optional<String> replayEndpoint, String topic, int replaySize) {
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(replayEndpoint, "replayEndpoint");
    this.topic =
        Objects.requireNonNull(topic, "topic").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    if (replaySize < 0) {
      throw new IllegalArgumentException("replaySize=" + replaySize + " must be >= 0");
    }
    this.replaySize = replaySize;
    this.context = new ZContext(1);
    try {
      this.pub = context.createSocket(SocketType.PUB);
      pub.setSndHWM(HWM);
      pub.setLinger(0);
      this.endpoint = attach(pub, endpoint, binds(endpoint), KvEventsConfig.ENDPOINT);
      if (replayEndpoint.isPresent()) {
        ZMQ.Socket router = context.createSocket(SocketType.ROUTER);
        router.setLinger(0);
        this.replayEndpoint =
            Optional.of(attach(router, replayEndpoint.get(), true, KvEventsConfig.REPLAY_ENDPOINT));
        this.replay = Optional.of(router);
      } else {
        this.replayEndpoint = Optional.empty();
        this.replay = Optional.empty();
      }
    } catch (RuntimeException e) {
      context.close();
      throw e;
    }
  }

  /** vLLM's rule: bind a wildcard or local transport, connect anything else. */
  static boolean binds(String endpoint) {
    return endpoint.contains("*")
        || endpoint.contains("::")
        || endpoint.startsWith("ipc://")
        || endpoint.startsWith("inproc://");
  }

  private static String attach(ZMQ.Socket socket, String address, boolean bind, String key) {
    try {
      if (bind) {
        socket.bind(address);
        // A wildcard port (tcp://*:*) is resolved now; report the real one.
        String last = socket.getLastEndpoint();
        return last == null ? address : last;
      }
      socket.connect(address);
      return address;
    } catch (ZMQException | IllegalArgumentException e) {
      throw new IllegalArgumentException(
          key
              + "="
              + address
              + ": cannot "
              + (bind ? "bind" : "connect")
              + " ("
              + e.getMessage()
              + "); is the port in use or the address wrong? Choose another with "
              + key,
          e);
    }
  }

  /** The PUB socket's address, with the port it got if it was a wildcard. */
  public String endpoint() {
    return endpoint;
  }

  /** The replay socket's address, with its real port; empty without replay. */
  public Optional<String> replayEndpoint() {
    return replayEndpoint;
  }

  @Override
  public void send(long sequence, byte[] payload) {
    pub.sendMore(topic);
    pub.sendMore(ByteBuffer.allocate(8).putLong(sequence).array());
    pub.send(payload, 0);
    if (replaySize > 0) {
      if (kept.size() == replaySize) {
        kept.pollFirst();
      }
      kept.addLast(new Kept(sequence, payload));
    }
  }

  @Override
  public void service() {
    if (replay.isEmpty()) {
      return;
    }
    ZMQ.Socket router = replay.get();
    for (int served = 0; served < 16; served++) {
      byte[] identity = router.recv(ZMQ.DONTWAIT);
      if (identity == null) {
        return;
      }
      java.util.List<byte[]> frames = new java.util.ArrayList<>();
      while (router.hasReceiveMore()) {
        frames.add(router.recv(0));
      }
      // (identity, "", start): what a REQ or a DEALER with a delimiter frame sends.
      if (frames.size() != 2 || frames.get(0).length != 0 || frames.get(1).length != 8) {
        continue;
      }
      long start = ByteBuffer.wrap(frames.get(1)).getLong();
      for (Kept k : kept) {
        if (k.sequence() >= start) {
          router.sendMore(identity);
          router.sendMore(new byte[0]);
          router.sendMore(ByteBuffer.allocate(8).putLong(k.sequence()).array());
          router.send(k.payload(), 0);
        }
      }
      router.sendMore(identity);
      router.sendMore(new byte[0]);
      router.sendMore(END);
      router.send(new byte[0], 0);
    }
  }

  @Override
  public void close() {
    context.close();
  }
}
