package io.kvtier.bench;

import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The failed calls of a load benchmark grouped by cause ({@link StreamedTurn#failure()}'s kind:
 * an HTTP status with the error's code, an error event, a stream without usage, an I/O error),
 * each with a count and the first message seen, so a run that lost requests says why instead of
 * only how many. Thread-safe.
 */
final class TurnFailures {
  private record Cause(AtomicLong count, String example) {}

  private final Map<String, Cause> byKind = new ConcurrentSkipListMap<>();

  /** Counts one failed call. */
  void add(StreamedTurn.Failure failure) {
    byKind
        .computeIfAbsent(failure.kind(), k -> new Cause(new AtomicLong(), failure.message()))
        .count()
        .incrementAndGet();
  }

  /** Failed calls counted. */
  long total() {
    return byKind.values().stream().mapToLong(c -> c.count().get()).sum();
  }

  /**
   * One line per cause, most frequent first, each indented by {@code indent}: {@code 8 x HTTP 400
   * context_length_exceeded, e.g. "..."}; empty when nothing failed.
   */
  String describe(String indent) {
    StringBuilder s = new StringBuilder();
    byKind.entrySet().stream()
        .sorted((a, b) -> Long.compare(b.getValue().count().get(), a.getValue().count().get()))
        .forEach(
            e ->
                s.append(indent)
                    .append(e.getValue().count().get())
                    .append(" x ")
                    .append(e.getKey())
                    .append(", e.g. \"")
                    .append(e.getValue().example())
                    .append("\"\n"));
    return s.toString();
  }
}
