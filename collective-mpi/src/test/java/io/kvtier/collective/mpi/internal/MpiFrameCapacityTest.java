package io.kvtier.collective.mpi.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The frame capacity predictor without MPI: what it learns and that it is a function of history. */
class MpiFrameCapacityTest {

  private static long print(String tag, int length) {
    return MpiCall.fingerprint(MpiCall.Kind.ALL_REDUCE_MIN, length, tag);
  }

  @Test
  void unseenCallsGetOneSlot() {
    MpiFrameCapacity capacity = new MpiFrameCapacity(128);
    assertThat(capacity.next()).isEqualTo(1);
    capacity.agreed(print("a", 64), 64);
    assertThat(capacity.next()).as("after a call never followed yet").isEqualTo(1);
  }

  @Test
  void aLoopOfCallSitesIsPredictedAfterOnePass() {
    MpiFrameCapacity capacity = new MpiFrameCapacity(128);
    int[] lengths = {1, 64, 3, 0, 128};
    String[] tags = {"ack", "digest", "give-up", "tick", "pages"};
    for (int i = 0; i < lengths.length; i++) {
      capacity.agreed(print(tags[i], lengths[i]), lengths[i]);
    }
    for (int pass = 0; pass < 3; pass++) {
      for (int i = 0; i < lengths.length; i++) {
        assertThat(capacity.next())
            .as("pass %d, call %s", pass, tags[i])
            .isEqualTo(Math.max(1, lengths[i]));
        capacity.agreed(print(tags[i], lengths[i]), lengths[i]);
      }
    }
  }

  @Test
  void payloadsLongerThanTheCapNeverSizeAFrame() {
    MpiFrameCapacity capacity = new MpiFrameCapacity(16);
    for (int i = 0; i < 3; i++) {
      capacity.agreed(print("big", 17), 17);
    }
    assertThat(capacity.next()).isEqualTo(1);
    capacity.agreed(print("big", 17), 16);
    assertThat(capacity.next()).isEqualTo(16);
  }

  @Test
  void ranksThatAgreedOnTheSameCallsPredictTheSameCapacities() {
    // The frame's shape must match on every rank; two predictors fed the same random history
    // (many call sites, so slots collide) must give the same capacity before every call.
    Random random = new Random(7);
    List<long[]> history = new ArrayList<>();
    for (int i = 0; i < 5_000; i++) {
      int site = random.nextInt(300);
      int length = site % 7 == 0 ? 200 : site % 65;
      history.add(new long[] {print("site-" + site, length), length});
    }
    MpiFrameCapacity one = new MpiFrameCapacity(128);
    MpiFrameCapacity other = new MpiFrameCapacity(128);
    for (long[] call : history) {
      int next = one.next();
      assertThat(other.next()).isEqualTo(next);
      assertThat(next).isBetween(1, 128);
      one.agreed(call[0], (int) call[1]);
      other.agreed(call[0], (int) call[1]);
    }
  }

  @Test
  void capBelowOneIsRejected() {
    assertThatThrownBy(() -> new MpiFrameCapacity(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cap=0");
  }
}
