package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.simulator.workload.Request;
import io.kvtier.simulator.workload.Workload;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class ArrivalFeedUnreadTest {

  private static final int COUNT = 5;

  /** A workload of 5 requests whose stream counts the requests made; sized or not. */
  private static Workload workload(boolean sized, AtomicInteger made) {
    return new Workload() {
      @Override
      public String spec() {
        return "test";
      }

      @Override
      public Stream<Request> requests() {
        Stream<Integer> ids = Stream.of(0, 1, 2, 3, 4);
        if (!sized) {
          ids = ids.filter(i -> true); // a filter forgets the size
        }
        return ids.map(
            i -> {
              made.incrementAndGet();
              return new Request(i, new int[] {1, 2, 3}, 1, Optional.empty());
            });
      }
    };
  }

  @Test
  void aSizedWorkloadIsCountedWithoutMakingItsRequests() {
    AtomicInteger made = new AtomicInteger();
    ArrivalFeed feed = new ArrivalFeed(workload(true, made), SimulationConfig.builder().build());
    assertThat(feed.unread()).isEqualTo(COUNT);
    assertThat(made).as("requests made to count them").hasValue(0);
  }

  @Test
  void aWorkloadOfUnknownSizeIsReadToItsEnd() {
    AtomicInteger made = new AtomicInteger();
    ArrivalFeed feed = new ArrivalFeed(workload(false, made), SimulationConfig.builder().build());
    assertThat(feed.unread()).isEqualTo(COUNT);
    assertThat(made).hasValue(COUNT);
  }
}
