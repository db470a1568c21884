package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

public class TraceTest {

  @Test
  public void holdsCopiesOfThePromptsInOrder() {
    int[] first = {5, 6, 7};
    Trace t = Trace.of(List.of(first, new int[] {8}));
    first[0] = 99;

    assertThat(t.size()).isEqualTo(2);
    assertThat(t.totalTokens()).isEqualTo(4);
    assertThat(t.promptLength(0)).isEqualTo(3);
    assertThat(t.prompt(0)).containsExactly(5, 6, 7);
    assertThat(t.prompts()[1]).containsExactly(8);
    t.prompt(1)[0] = 42;
    assertThat(t.prompt(1)).containsExactly(8);
  }

  @Test
  public void builderGrowsPastItsHints() {
    Trace.Builder b = Trace.builder(0, 0);
    for (int i = 1; i <= 100; i++) {
      int[] p = new int[i];
      p[i - 1] = i;
      b.add(p, 0, i);
    }

    Trace t = b.build();

    assertThat(t.size()).isEqualTo(100);
    assertThat(t.totalTokens()).isEqualTo(5050);
    assertThat(t.prompt(99)[99]).isEqualTo(100);
    assertThatThrownBy(b::build).hasMessageContaining("build() was already called");
  }

  @Test
  public void asRequestsEveryPromptArrivesAtZeroWithTheGivenBudget() {
    Trace t = Trace.of(List.of(new int[] {1, 2}, new int[] {3}));

    assertThat(t.requests(7).toList())
        .containsExactly(
            new Request(0, new int[] {1, 2}, 7, Optional.empty()),
            new Request(0, new int[] {3}, 7, Optional.empty()));
  }

  @Test
  public void rejectsEmptyPromptsAndBadIndexes() {
    assertThatThrownBy(() -> Trace.of(List.of(new int[] {1}, new int[0])))
        .hasMessage("prompt 1 is empty: every prompt needs at least one token");
    Trace t = Trace.of(List.<int[]>of(new int[] {1}));
    assertThatThrownBy(() -> t.prompt(1)).isInstanceOf(IndexOutOfBoundsException.class);
  }

  @Test
  public void requestValidatesAndCopies() {
    int[] p = {1, 2, 3};
    Request r = new Request(5, p, 2, Optional.of("c"));
    p[0] = 9;

    assertThat(r.prompt()).containsExactly(1, 2, 3);
    assertThat(r.token(2)).isEqualTo(3);
    assertThat(r.commonPrefixLength(new Request(0, new int[] {1, 2, 4}, 0, Optional.empty())))
        .isEqualTo(2);
    assertThatThrownBy(() -> new Request(-1, p, 0, Optional.empty()))
        .hasMessage("arrivalMillis=-1 must be >= 0");
    assertThatThrownBy(() -> new Request(0, new int[0], 0, Optional.empty()))
        .hasMessage("prompt is empty: a request needs at least one token");
    assertThatThrownBy(() -> new Request(0, new int[] {1, -3}, 0, Optional.empty()))
        .hasMessage("prompt[1]=-3 is negative: token ids must be >= 0");
    assertThatThrownBy(() -> new Request(0, p, -1, Optional.empty()))
        .hasMessage("maxOutputTokens=-1 must be >= 0");
  }
}
