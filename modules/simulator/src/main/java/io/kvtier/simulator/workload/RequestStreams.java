package io.kvtier.simulator.workload;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/** Streams of generated requests. */
final class RequestStreams {

  private RequestStreams() {}

  /**
   * A stream of {@code count} requests made by calling {@code next} with 0, 1, 2, ... in order.
   * Generators keep their draw state in {@code next}; an iterator-backed stream calls it from one
   * thread in order even if the caller asks for a parallel stream.
   *
   * @param count how many requests
   * @param next makes request {@code i} after requests {@code 0..i-1}
   * @return the stream
   */
  static Stream<Request> sequential(int count, IntFunction<Request> next) {
    Iterator<Request> it =
        new Iterator<>() {
          private int i;

          @Override
          public boolean hasNext() {
            return i < count;
          }

          @Override
          public Request next() {
            if (i >= count) {
              throw new NoSuchElementException("all " + count + " requests were returned");
            }
            return next.apply(i++);
          }
        };
    int characteristics = Spliterator.ORDERED | Spliterator.NONNULL | Spliterator.IMMUTABLE;
    return StreamSupport.stream(Spliterators.spliterator(it, count, characteristics), false);
  }
}
