package io.kvtier.collective.mpi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The {@code mpi} provider in this JVM, a single rank started without mpirun: the join's rules
 * and the paths of each call that one rank can reach (inline and two-call reductions, empty and
 * large broadcasts).
 */
@Timeout(60)
class MpiSingleRankTest {

  private final MpiCollectiveProvider provider = new MpiCollectiveProvider();

  @BeforeEach
  void requireOpenMpi() {
    MpiTests.assumeLibrary();
  }

  private static CollectiveSpec launcherSpec(String group) {
    return new CollectiveSpec(group, OptionalInt.empty(), OptionalInt.empty(), MpiTests.WATCHDOG);
  }

  @Test
  void availabilityWarnsThatThisProcessIsASingleRank() {
    assertThat(provider.availability().available()).isTrue();
    assertThat(provider.availability().reason())
        .contains("Open MPI v")
        .contains("warning: not started by mpirun");
  }

  @Test
  void launcherAssignsRankAndSize() {
    try (Collective c = provider.join(launcherSpec(MpiTests.GROUP), BackendContext.defaults())) {
      assertThat(c.rank()).isZero();
      assertThat(c.size()).isOne();
    }
  }

  @ParameterizedTest(name = "mpi.inline-longs={0}")
  @ValueSource(ints = {2, 16})
  void reductionsOfEveryLengthAndOpReturnTheValues(int inline) {
    try (Collective c =
        provider.join(
            launcherSpec(MpiTests.GROUP),
            new BackendContext(
                0,
                Map.of("mpi.inline-longs", Integer.toString(inline)),
                BackendContext.defaults().time(),
                BackendContext.defaults().metrics()))) {
      for (ReduceOp op : ReduceOp.values()) {
        for (int length : new int[] {0, 1, 2, 3, 9, 16, 17, 100, 1000}) {
          long[] values = new long[length];
          for (int i = 0; i < length; i++) {
            values[i] = i % 3 == 0 ? Long.MIN_VALUE + i : Long.MAX_VALUE - i;
          }
          long[] reduced = c.allReduce(op, values, "single-" + op);
          assertThat(reduced)
              .as("%s of %d values", op, length)
              .isEqualTo(values)
              .isNotSameAs(values);
        }
      }
    }
  }

  @Test
  void broadcastsOfEverySizeReturnACopy() {
    try (Collective c = provider.join(launcherSpec(MpiTests.GROUP), BackendContext.defaults())) {
      for (int length : new int[] {0, 1, 4095, 4096, 64 * 1024, 1 << 20}) {
        byte[] payload = new byte[length];
        for (int i = 0; i < length; i++) {
          payload[i] = (byte) (i * 31);
        }
        assertThat(c.broadcast(0, payload, "single-bcast")).isEqualTo(payload).isNotSameAs(payload);
      }
      assertThatThrownBy(() -> c.broadcast(1, new byte[1], "bad-root"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("root=1 must be a rank in [0, 1)");
    }
  }

  @Test
  void specThatContradictsMpiIsRejected() {
    CollectiveSpec tooMany = CollectiveSpec.of(MpiTests.GROUP, 2, 0, MpiTests.WATCHDOG);
    assertThatThrownBy(() -> provider.join(tooMany, BackendContext.defaults()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("worldSize=2 but MPI_COMM_WORLD has 1 ranks");
    CollectiveSpec otherRank =
        new CollectiveSpec(
            MpiTests.GROUP, OptionalInt.empty(), OptionalInt.of(3), MpiTests.WATCHDOG);
    assertThatThrownBy(() -> provider.join(otherRank, BackendContext.defaults()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rank=3 but MPI made this process rank 0");
    // A failed join leaves nothing open.
    provider.join(launcherSpec(MpiTests.GROUP), BackendContext.defaults()).close();
  }

  @Test
  void oneGroupPerProcessAndOneOpenHandle() {
    try (Collective c = provider.join(launcherSpec(MpiTests.GROUP), BackendContext.defaults())) {
      assertThatThrownBy(
              () -> provider.join(launcherSpec(MpiTests.GROUP), BackendContext.defaults()))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("already has an open mpi collective");
      c.barrier("still-usable");
    }
    assertThatThrownBy(
            () -> provider.join(launcherSpec("another-group"), BackendContext.defaults()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("joined as '" + MpiTests.GROUP + "'")
        .hasMessageContaining("'another-group' is refused");
  }

  @Test
  void closedHandleRefusesCalls() {
    Collective c = provider.join(launcherSpec(MpiTests.GROUP), BackendContext.defaults());
    c.close();
    c.close();
    assertThatThrownBy(() -> c.allReduce(ReduceOp.MIN, new long[1], "after-close"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("is closed");
  }
}
