package io.kvtier.cli;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * SIGINT and SIGTERM for {@code kvtier serve}, handled before the JVM starts its shutdown.
 *
 * <p>Why not a shutdown hook alone: the JVM runs its hooks concurrently, and a collective provider
 * has hooks of its own (the {@code mpi} one calls {@code MPI_Finalize}, Hazelcast leaves its
 * cluster). A graceful stop of a rank group must close the engine first, broadcasting the stop to
 * the other ranks, and only then let those hooks run: the handler asks the command to stop and
 * the JVM exits when the command has returned. The first signal goes to {@code onFirst}, which
 * says whether it started a graceful stop; if not, and on any second signal, the process ends as
 * the JVM's own handler would end it.
 */
final class StopSignals implements AutoCloseable {
  private static final List<String> NAMES = List.of("INT", "TERM");

  private final Map<Signal, SignalHandler> previous = new LinkedHashMap<>();
  private final AtomicBoolean signalled = new AtomicBoolean();
  private final BooleanSupplier onFirst;

  private StopSignals(BooleanSupplier onFirst) {
    this.onFirst = Objects.requireNonNull(onFirst, "onFirst");
  }

  /**
   * Handles SIGINT and SIGTERM until closed; where the JVM does not let it (for example under
   * {@code -Xrs}), the signal keeps its handler and the command's shutdown hook stops it.
   *
   * @param onFirst what the first signal does, true if it started a graceful stop; it must not
   *     block
   * @return the handlers, to close (restoring the previous ones) when the command returns
   */
  static StopSignals install(BooleanSupplier onFirst) {
    StopSignals signals = new StopSignals(onFirst);
    for (String name : NAMES) {
      try {
        Signal signal = new Signal(name);
        signals.previous.put(signal, Signal.handle(signal, signals::handle));
      } catch (IllegalArgumentException | UnsupportedOperationException e) {
        System.getLogger(StopSignals.class.getName())
            .log(
                System.Logger.Level.DEBUG,
                "SIG" + name + " keeps the JVM's handler: " + e.getMessage());
      }
    }
    return signals;
  }

  private void handle(Signal signal) {
    if (signalled.compareAndSet(false, true) && onFirst.getAsBoolean()) {
      return;
    }
    // End now, through the JVM's handler (its shutdown hooks run).
    SignalHandler before = previous.get(signal);
    if (before != null && before != SignalHandler.SIG_DFL && before != SignalHandler.SIG_IGN) {
      before.handle(signal);
    } else {
      Thread.ofPlatform()
          .name("kvtier-signal-exit")
          .start(() -> System.exit(128 + signal.getNumber()));
    }
  }

  @Override
  public void close() {
    previous.forEach(
        (signal, handler) -> {
          try {
            Signal.handle(signal, handler);
          } catch (IllegalArgumentException e) {
            // The JVM's handler could not be put back: the JVM is shutting down.
          }
        });
    previous.clear();
  }
}
