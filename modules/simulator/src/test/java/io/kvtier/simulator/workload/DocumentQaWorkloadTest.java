package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.simulator.workload.DocumentQaWorkload.Order;
import io.kvtier.testkit.SeedExtension;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
public class DocumentQaWorkloadTest {

  private static DocumentQaWorkload small(long seed, Order order) {
    return new DocumentQaWorkload(5, 300, 3, 6, 10, order, 0, seed, 1000);
  }

  private static int[] documents(DocumentQaWorkload w) {
    return w.requests().mapToInt(r -> r.token(0)).toArray();
  }

  @Test
  public void theSameSeedGivesTheSameRequests(Random random) {
    long seed = random.nextLong();

    assertThat(small(seed, Order.RANDOM).requests().toList())
        .isEqualTo(small(seed, Order.RANDOM).requests().toList());
  }

  @Test
  public void documentsDifferOnlyInTheirLeadingIdAndEachAskAddsAQuestion(Random random) {
    List<Request> requests = small(random.nextLong(), Order.RANDOM).requests().toList();
    int[] body = Arrays.copyOfRange(requests.getFirst().prompt(), 1, 300);

    assertThat(requests).hasSize(15);
    for (Request r : requests) {
      int d = r.token(0);
      assertThat(r.contextId()).contains("document-" + d);
      assertThat(r.promptLength()).isEqualTo(306);
      assertThat(r.maxOutputTokens()).isEqualTo(10);
      assertThat(Arrays.copyOfRange(r.prompt(), 1, 300)).isEqualTo(body);
    }
  }

  @Test
  public void ordersAskEachDocumentTheRequestedNumberOfTimes(Random random) {
    long seed = random.nextLong();

    assertThat(documents(small(seed, Order.TILE)))
        .containsExactly(0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4);
    assertThat(documents(small(seed, Order.INTERLEAVE)))
        .containsExactly(0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4);
    int[] shuffled = documents(small(seed, Order.RANDOM));
    Arrays.sort(shuffled);
    assertThat(shuffled).containsExactly(0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4);
  }

  @Test
  public void specRoundTripsAndDefaultsAreTheDocumentedOnes() {
    DocumentQaWorkload w = small(4, Order.INTERLEAVE);

    assertThat(Workloads.parse(w.spec())).isEqualTo(w);
    assertThat(Workloads.parse("doc-qa")).isEqualTo(DocumentQaWorkload.DEFAULTS);
    assertThat(DocumentQaWorkload.DEFAULTS)
        .extracting(
            DocumentQaWorkload::documents,
            DocumentQaWorkload::documentTokens,
            DocumentQaWorkload::asks)
        .containsExactly(8, 20000, 2);
  }

  @Test
  public void rejectsMoreDocumentsThanTokenIds() {
    assertThatThrownBy(() -> new DocumentQaWorkload(11, 5, 1, 0, 0, Order.TILE, 0, 1, 10))
        .hasMessage("documents=11 must be <= vocab=10: a document's id is its first token");
  }
}
