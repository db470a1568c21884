package io.kvtier.route;

import java.io.IOException;
import java.io.InputStream;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Closes a replica's reply that has sent nothing for too long. Why: {@code java.net.http}'s
 * client times a request out only until its headers come; a replica that then goes silent (a
 * frozen process, a host gone without a reset) would hold the router's reader, and the client's
 * stream, for ever. The router's health thread calls {@link #check} every second.
 */
final class SilenceWatch {
  private final long limitNanos;
  private final Set<Watched> open = ConcurrentHashMap.newKeySet();

  SilenceWatch(long limitNanos) {
    this.limitNanos = limitNanos;
  }

  /** One reply being read; close it when done. */
  final class Watched implements AutoCloseable {
    private final InputStream in;
    private volatile long last = System.nanoTime();
    private volatile boolean silenced;

    private Watched(InputStream in) {
      this.in = in;
    }

    /** The replica sent something. */
    void heard() {
      last = System.nanoTime();
    }

    /** Whether the watch closed the reply for its silence (a read then ended or failed). */
    boolean silenced() {
      return silenced;
    }

    @Override
    public void close() {
      open.remove(this);
    }
  }

  /** Starts watching a reply's body. */
  Watched watch(InputStream in) {
    Watched w = new Watched(in);
    open.add(w);
    return w;
  }

  /** Closes the replies silent for longer than the limit. */
  void check() {
    long now = System.nanoTime();
    for (Watched w : open) {
      if (now - w.last > limitNanos) {
        w.silenced = true;
        open.remove(w);
        try {
          w.in.close();
        } catch (IOException e) {
          // Closing is all we wanted; the reader sees the end or an error either way.
        }
      }
    }
  }
}
