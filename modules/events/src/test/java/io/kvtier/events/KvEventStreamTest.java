package io.kvtier.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.CacheEvent;
import io.kvtier.core.cache.CacheMedium;
import io.kvtier.spi.PageKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The stream's batching, its bounded buffer and what a failing or stuck sink does. */
class KvEventStreamTest {
  private static final KvEventCodec CODEC = new KvEventCodec(0, "file");

  /** Records what it is sent; may hold the publisher thread until released. */
  static final class FakeSink implements KvEventSink {
    final List<Long> sequences = Collections.synchronizedList(new ArrayList<>());
    final List<byte[]> payloads = Collections.synchronizedList(new ArrayList<>());
    final CountDownLatch release;
    final CountDownLatch entered = new CountDownLatch(1);
    volatile boolean fail;
    volatile boolean closed;

    FakeSink(boolean hold) {
      this.release = new CountDownLatch(hold ? 1 : 0);
    }

    @Override
    public void send(long sequence, byte[] payload) {
      entered.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (fail) {
        throw new IllegalStateException("sink down");
      }
      sequences.add(sequence);
      payloads.add(payload);
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  static CacheEvent removed(long i) {
    return new CacheEvent.BlocksRemoved(CacheMedium.DEVICE, List.of(new PageKey(i, 0, 0, 0)));
  }

  @Test
  void batchesAreSealedWhenFullAndTheFirstOpensWithAllBlocksCleared() {
    FakeSink sink = new FakeSink(false);
    KvEventStream stream = new KvEventStream(sink, CODEC, 16, 3, Duration.ofHours(1), () -> 1.5);
    for (int i = 0; i < 7; i++) {
      stream.onEvent(removed(i));
    }
    stream.close();
    assertThat(sink.closed).isTrue();
    assertThat(sink.sequences).containsExactly(0L, 1L, 2L);
    List<Object> first = list(MsgpackReader.decode(sink.payloads.get(0)));
    assertThat(first.get(0)).isEqualTo(1.5);
    assertThat(list(first.get(1))).hasSize(4);
    assertThat(list(list(first.get(1)).get(0))).containsExactly("AllBlocksCleared");
    assertThat(list(list(first.get(1)).get(1))).containsExactly("BlockRemoved", List.of(0L), "GPU");
    assertThat(list(list(MsgpackReader.decode(sink.payloads.get(2))).get(1))).hasSize(1);
    assertThat(stream.stats()).isEqualTo(new KvEventStats(3, 3, 0, 0, 0));
  }

  @Test
  void aFullBufferDropsBatchesWithoutWaitingAndLeavesASequenceGap() throws Exception {
    FakeSink sink = new FakeSink(true);
    KvEventStream stream = new KvEventStream(sink, CODEC, 2, 1, Duration.ofHours(1), () -> 0);
    stream.onEvent(removed(0));
    assertThat(sink.entered.await(10, TimeUnit.SECONDS)).isTrue();
    // The publisher thread holds batch 0 in send; 1 and 2 fill the buffer; 3..9 are dropped,
    // and the scheduler thread never waited.
    for (int i = 1; i < 10; i++) {
      stream.onEvent(removed(i));
    }
    assertThat(stream.stats().droppedBatches()).isEqualTo(7);
    assertThat(stream.stats().droppedEvents()).isEqualTo(7);
    sink.release.countDown();
    for (int i = 0; i < 2_000 && stream.stats().published() < 3; i++) {
      sleep();
    }
    stream.onEvent(removed(10));
    stream.close();
    assertThat(sink.sequences).containsExactly(0L, 1L, 2L, 10L);
    assertThat(stream.stats().sealed()).isEqualTo(11);
    assertThat(stream.stats().published()).isEqualTo(4);
  }

  @Test
  void aFailingSendIsCountedAndTheStreamGoesOn() {
    FakeSink sink = new FakeSink(false);
    sink.fail = true;
    KvEventStream stream = new KvEventStream(sink, CODEC, 4, 1, Duration.ofHours(1), () -> 0);
    stream.onEvent(removed(0));
    for (int i = 0; i < 2_000 && stream.stats().failedSends() < 1; i++) {
      sleep();
    }
    sink.fail = false;
    stream.onEvent(removed(1));
    stream.close();
    assertThat(stream.stats().failedSends()).isEqualTo(1);
    assertThat(sink.sequences).containsExactly(1L);
  }

  @Test
  void theFlushIntervalSealsWhatCameAndCloseStopsTheThread() {
    FakeSink sink = new FakeSink(false);
    KvEventStream stream = new KvEventStream(sink, CODEC, 4, 100, Duration.ofMillis(1), () -> 0);
    for (int i = 0; i < 2_000 && sink.sequences.isEmpty(); i++) {
      sleep();
    }
    assertThat(sink.sequences).as("the opening AllBlocksCleared").containsExactly(0L);
    stream.onEvent(removed(0));
    for (int i = 0; i < 2_000 && sink.sequences.size() < 2; i++) {
      sleep();
    }
    assertThat(sink.sequences).containsExactly(0L, 1L);
    stream.close();
    stream.onEvent(removed(1));
    stream.flush();
    assertThat(stream.stats().sealed()).as("events after close are ignored").isEqualTo(2);
  }

  @Test
  void aStuckSinkMakesCloseFailWithTheReason() {
    FakeSink sink = new FakeSink(true);
    KvEventStream stream = new KvEventStream(sink, CODEC, 4, 1, Duration.ofHours(1), () -> 0);
    stream.onEvent(removed(0));
    assertThatThrownBy(stream::close)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("did not stop within 5 s");
    // The interrupt ends the stuck send; the thread then closes its own sink.
    sink.release.countDown();
    for (int w = 0; !sink.closed; w++) {
      assertThat(w).as("5 ms waits for the publisher thread to close its sink").isLessThan(1000);
      sleep();
    }
  }

  @Test
  void theSinkIsOpenedUsedAndClosedOnThePublisherThreadOnly() {
    List<String> threads = Collections.synchronizedList(new ArrayList<>());
    KvEventSink sink =
        new KvEventSink() {
          @Override
          public void open() {
            threads.add("open " + Thread.currentThread().getName());
          }

          @Override
          public void send(long sequence, byte[] payload) {
            threads.add("send " + Thread.currentThread().getName());
          }

          @Override
          public void close() {
            threads.add("close " + Thread.currentThread().getName());
          }
        };
    KvEventStream stream = new KvEventStream(sink, CODEC, 4, 1, Duration.ofHours(1), () -> 0);
    assertThat(threads).as("open has run when the constructor returns").hasSize(1);
    stream.onEvent(removed(0));
    stream.close();
    assertThat(threads)
        .containsExactly("open kvtier-events", "send kvtier-events", "close kvtier-events");
  }

  @Test
  void aSinkThatCannotOpenFailsTheConstructorWithItsOwnError() {
    KvEventSink sink =
        new KvEventSink() {
          @Override
          public void open() {
            throw new IllegalArgumentException("kvtier.events.endpoint=tcp://x:1: cannot bind");
          }

          @Override
          public void send(long sequence, byte[] payload) {
            throw new AssertionError("never opened");
          }

          @Override
          public void close() {
            throw new AssertionError("never opened");
          }
        };
    assertThatThrownBy(() -> new KvEventStream(sink, CODEC, 4, 1, Duration.ofMillis(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("kvtier.events.endpoint=tcp://x:1: cannot bind");
  }

  @Test
  void badSizesAreRefused() {
    assertThatThrownBy(
            () -> new KvEventStream(new FakeSink(false), CODEC, 0, 1, Duration.ofMillis(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bufferSize=0");
  }

  @SuppressWarnings("unchecked")
  static List<Object> list(Object o) {
    return (List<Object>) o;
  }

  private static void sleep() {
    try {
      Thread.sleep(5);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
