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
 * as a sequence gap and asks the replay socket for. The sockets are created and bound in {@link
 * #open}, which the stream runs on its publisher thread (the stream's constructor rethrows a bad or
 * busy address), and are then used and closed by that thread only: a ZeroMQ socket belongs to one
 * thread.
 */
public final class ZmqKvEventSink implements KvEventSink {
  private static final byte[] END = ByteBuffer.allocate(8).putLong(-1).array();
  private static final int HWM = 100_000;

  /**
   * The handshake interval of every kvtier ZeroMQ socket, in milliseconds. JeroMQ 0.6.0's poller
   * can lose a connecting socket's registration when the connection completes in the same poll
   * pass as a command from the socket's thread (a subscribe, a send): the TCP connection is up,
   * but neither side's greeting is ever read, and nothing retries. Seen under CPU load in about one
   * late subscriber in ten. A handshake that has not finished in this interval fails, and the
   * connecting socket reconnects on a fresh channel. 1 s is long for a greeting on any network.
   */
  public static final int HANDSHAKE_MS = 1_000;

  private final String requestedEndpoint;
  private final Optional<String> requestedReplayEndpoint;
  private final byte[] topic;
  private final int replaySize;
  private final ArrayDeque<Kept> kept = new ArrayDeque<>();
  // Set by open, on the publisher thread; read by other threads after the stream's constructor.
  private volatile ZContext context;
  private volatile ZMQ.Socket pub;
  private volatile Optional<ZMQ.Socket> replay = Optional.empty();
  private volatile String endpoint;
  private volatile Optional<String> replayEndpoint = Optional.empty();

  private record Kept(long sequence, byte[] payload) {}

  /**
   * A sink for these addresses; {@link #open} creates its sockets.
   *
   * @param endpoint the PUB address: bound if it holds {@code *} or {@code ::} or is {@code
   *     ipc://} or {@code inproc://}, else connected (to a proxy)
   * @param replayEndpoint the ROUTER address, always bound; empty for none
   * @param topic the first frame of every message
   * @param replaySize batches kept for replay
   */
  public ZmqKvEventSink(
      String endpoint, Optional<String> replayEndpoint, String topic, int replaySize) {
    this.requestedEndpoint = Objects.requireNonNull(endpoint, "endpoint");
    this.requestedReplayEndpoint = Objects.requireNonNull(replayEndpoint, "replayEndpoint");
    this.topic =
        Objects.requireNonNull(topic, "topic").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    if (replaySize < 0) {
      throw new IllegalArgumentException("replaySize=" + replaySize + " must be >= 0");
    }
    this.replaySize = replaySize;
  }

  /**
   * Creates and binds (or connects) the sockets, on the calling thread, which then owns them.
   *
   * @throws IllegalArgumentException if an address cannot be bound or connected, naming it
   * @throws IllegalStateException if already open
   */
  @Override
  public void open() {
    if (context != null) {
      throw new IllegalStateException("the ZeroMQ event sink is already open");
    }
    ZContext zmq = new ZContext(1);
    try {
      ZMQ.Socket socket = zmq.createSocket(SocketType.PUB);
      socket.setSndHWM(HWM);
      socket.setLinger(0);
      socket.setHandshakeIvl(HANDSHAKE_MS);
      String bound =
          attach(socket, requestedEndpoint, binds(requestedEndpoint), KvEventsConfig.ENDPOINT);
      Optional<ZMQ.Socket> router = Optional.empty();
      Optional<String> routerBound = Optional.empty();
      if (requestedReplayEndpoint.isPresent()) {
        ZMQ.Socket r = zmq.createSocket(SocketType.ROUTER);
        r.setLinger(0);
        r.setHandshakeIvl(HANDSHAKE_MS);
        routerBound =
            Optional.of(
                attach(r, requestedReplayEndpoint.get(), true, KvEventsConfig.REPLAY_ENDPOINT));
        router = Optional.of(r);
      }
      this.pub = socket;
      this.replay = router;
      this.endpoint = bound;
      this.replayEndpoint = routerBound;
      this.context = zmq;
    } catch (RuntimeException e) {
      zmq.close();
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

  /**
   * The PUB socket's address, with the port it got if it was a wildcard.
   *
   * @throws IllegalStateException before {@link #open}
   */
  public String endpoint() {
    if (endpoint == null) {
      throw new IllegalStateException("the ZeroMQ event sink is not open yet");
    }
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
    if (context != null) {
      context.close();
    }
  }
}
