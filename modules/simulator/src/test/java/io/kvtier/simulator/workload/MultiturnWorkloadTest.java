package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.simulator.workload.MultiturnWorkload.Order;
import io.kvtier.testkit.SeedExtension;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
public class MultiturnWorkloadTest {

  private static MultiturnWorkload small(long seed, Order order, double rate, long think) {
    return new MultiturnWorkload(10, 4, 16, 4, 8, rate, think, order, seed, 1000);
  }

  @Test
  public void theSameSeedGivesTheSameRequests(Random random) {
    long seed = random.nextLong();

    assertThat(small(seed, Order.RANDOM, 3, 100).requests().toList())
        .isEqualTo(small(seed, Order.RANDOM, 3, 100).requests().toList())
        .isNotEqualTo(small(seed ^ 1, Order.RANDOM, 3, 100).requests().toList());
  }

  @Test
  public void eachTurnExtendsThePreviousTurnOfItsConversation(Random random) {
    for (Order order : Order.values()) {
      List<Request> requests = small(random.nextLong(), order, 0, 0).requests().toList();
      Map<String, int[]> last = new HashMap<>();

      assertThat(requests).hasSize(40);
      for (Request r : requests) {
        assertThat(r.maxOutputTokens()).isEqualTo(4);
        int[] previous = last.put(r.contextId().orElseThrow(), r.prompt());
        int turn = previous == null ? 0 : (previous.length - 16) / 12 + 1;
        assertThat(r.promptLength()).isEqualTo(16 + 12 * turn);
        if (previous != null) {
          assertThat(Arrays.copyOf(r.prompt(), previous.length)).isEqualTo(previous);
        }
      }
      assertThat(last).hasSize(10);
      assertThat(last.values()).allMatch(p -> p.length == 16 + 12 * 3);
    }
  }

  @Test
  public void fifoWithoutThinkTimeIsRoundRobin(Random random) {
    List<Request> requests = small(random.nextLong(), Order.FIFO, 0, 0).requests().toList();

    for (int i = 0; i < requests.size(); i++) {
      assertThat(requests.get(i).contextId()).contains("conversation-" + (i % 10));
    }
  }

  @Test
  public void turnsOfAConversationAreAtLeastTheThinkTimeApart(Random random) {
    long think = 500;
    List<Request> requests = small(random.nextLong(), Order.RANDOM, 40, think).requests().toList();
    Map<String, Long> lastArrival = new HashMap<>();

    long previousArrival = 0;
    for (Request r : requests) {
      assertThat(r.arrivalMillis()).isGreaterThanOrEqualTo(previousArrival);
      previousArrival = r.arrivalMillis();
      Long last = lastArrival.put(r.contextId().orElseThrow(), r.arrivalMillis());
      if (last != null) {
        assertThat(r.arrivalMillis() - last).isGreaterThanOrEqualTo(think);
      }
    }
  }

  @Test
  public void orderAndRateDoNotChangeTheConversationsText(Random random) {
    long seed = random.nextLong();
    Map<String, int[]> fifo = finalTurns(small(seed, Order.FIFO, 0, 0));
    Map<String, int[]> timed = finalTurns(small(seed, Order.RANDOM, 7, 300));

    assertThat(fifo.keySet()).isEqualTo(timed.keySet());
    fifo.forEach((c, p) -> assertThat(timed.get(c)).as(c).isEqualTo(p));
  }

  private static Map<String, int[]> finalTurns(MultiturnWorkload w) {
    Map<String, int[]> out = new HashMap<>();
    w.requests().forEach(r -> out.put(r.contextId().orElseThrow(), r.prompt()));
    return out;
  }

  @Test
  public void specRoundTripsAndDefaultsAreTheDocumentedOnes() {
    MultiturnWorkload w = small(9, Order.FIFO, 1.5, 20);

    assertThat(Workloads.parse(w.spec())).isEqualTo(w);
    assertThat(Workloads.parse("multiturn")).isEqualTo(MultiturnWorkload.DEFAULTS);
    assertThat(MultiturnWorkload.DEFAULTS)
        .extracting(
            MultiturnWorkload::conversations,
            MultiturnWorkload::turns,
            MultiturnWorkload::firstTokens,
            MultiturnWorkload::answerTokens,
            MultiturnWorkload::questionTokens)
        .containsExactly(128, 5, 512, 64, 128);
  }

  @Test
  public void rejectsBadParameters() {
    assertThatThrownBy(() -> new MultiturnWorkload(1, 0, 1, 0, 0, 0, 0, Order.FIFO, 1, 10))
        .hasMessage("turns=0 must be >= 1");
    assertThatThrownBy(
            () -> new MultiturnWorkload(1, 1 << 20, 1, 1 << 12, 0, 0, 0, Order.FIFO, 1, 10))
        .hasMessageContaining("the last turn's prompt would have");
  }
}
