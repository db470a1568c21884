package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The guard over a real collective (the {@code local} provider from backend-sim, through the
 * SPI): agreeing ranks pass through, disagreeing ranks all fail naming every rank's call.
 */
@Timeout(30)
class GuardedCollectiveTest {
  private static final AtomicInteger GROUPS = new AtomicInteger();

  private static CollectiveProvider local() {
    return ServiceLoader.load(CollectiveProvider.class).stream()
        .map(ServiceLoader.Provider::get)
        .filter(p -> p.name().equals("local"))
        .findFirst()
        .orElseThrow();
  }

  /** Runs {@code body} on every rank of a fresh guarded group and returns each rank's outcome. */
  private static List<Object> onRanks(int size, Function<GuardedCollective, Object> body)
      throws InterruptedException {
    String group = "guard-test-" + GROUPS.incrementAndGet();
    CollectiveProvider provider = local();
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<Object>> futures = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        futures.add(
            pool.submit(
                () -> {
                  Collective raw =
                      provider.join(
                          CollectiveSpec.of(group, size, rank, Duration.ofSeconds(10)),
                          BackendContext.defaults().withRank(rank));
                  try (GuardedCollective guarded = new GuardedCollective(raw)) {
                    return body.apply(guarded);
                  } catch (RuntimeException e) {
                    return e;
                  }
                }));
      }
      List<Object> outcomes = new ArrayList<>();
      for (Future<Object> f : futures) {
        try {
          outcomes.add(f.get());
        } catch (ExecutionException e) {
          outcomes.add(e.getCause());
        }
      }
      return outcomes;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void agreeingRanksGetTheDelegateResultsAndCountSequences() throws Exception {
    List<Object> outcomes =
        onRanks(
            4,
            c -> {
              long[] min = c.allReduce(ReduceOp.MIN, new long[] {10 + c.rank(), -c.rank()}, "a");
              long[] sum = c.allReduce(ReduceOp.SUM, new long[] {c.rank()}, "b");
              byte[] b = c.broadcast(2, c.rank() == 2 ? new byte[] {7, 8} : null, "c");
              c.barrier("d");
              return List.of(min[0], min[1], sum[0], (long) b.length, (long) b[1], c.sequence());
            });
    for (Object o : outcomes) {
      assertThat(o).isEqualTo(List.of(10L, -3L, 6L, 2L, 8L, 4L));
    }
  }

  @Test
  void differentTagsFailOnEveryRankNamingEachRanksCall() throws Exception {
    List<Object> outcomes =
        onRanks(
            3,
            c -> {
              c.barrier("start");
              // rank 1 took another decision: it broadcasts where the others reduce
              if (c.rank() == 1) {
                return c.broadcast(0, new byte[0], "recv");
              }
              return c.allReduce(ReduceOp.MIN, new long[] {1}, "sync");
            });
    for (Object o : outcomes) {
      assertThat(o).isInstanceOf(CollectiveDesyncException.class);
      String message = ((Exception) o).getMessage();
      assertThat(message)
          .contains("rank 0: allReduce(MIN, length=1) tag 'sync' seq 1")
          .contains("rank 1: broadcast(root=0) tag 'recv' seq 1")
          .contains("rank 2: allReduce(MIN, length=1) tag 'sync' seq 1");
    }
  }

  @Test
  void anExtraCallOnOneRankIsADesyncAndTheGroupStaysBroken() throws Exception {
    List<Object> outcomes =
        onRanks(
            2,
            c -> {
              try {
                if (c.rank() == 0) {
                  c.barrier("extra");
                }
                c.barrier("tick");
                return "no error";
              } catch (CollectiveDesyncException first) {
                try {
                  c.barrier("tick");
                  return "second call passed";
                } catch (CollectiveDesyncException second) {
                  return second;
                }
              }
            });
    for (Object o : outcomes) {
      assertThat(o).isInstanceOf(CollectiveDesyncException.class);
      assertThat(((Exception) o).getMessage()).contains("broken");
    }
  }

  @Test
  void allReduceIntoIsGuardedLikeAllReduceAndTheFormsMix() throws Exception {
    List<Object> outcomes =
        onRanks(
            3,
            c -> {
              long[] values = {10 + c.rank(), -c.rank()};
              // In place, as the engine's sync does.
              c.allReduceInto(ReduceOp.MAX, values, values, "a");
              // Rank 0 uses the other form of the same call: that is not a desync.
              long[] sum = new long[1];
              if (c.rank() == 0) {
                sum = c.allReduce(ReduceOp.SUM, new long[] {c.rank()}, "b");
              } else {
                c.allReduceInto(ReduceOp.SUM, new long[] {c.rank()}, sum, "b");
              }
              return List.of(values[0], values[1], sum[0], c.sequence());
            });
    for (Object o : outcomes) {
      assertThat(o).isEqualTo(List.of(12L, 0L, 3L, 2L));
    }
  }

  @Test
  void allReduceIntoAtAnotherCallFailsEveryRankAndABadResultArrayFailsBeforeAnyCall()
      throws Exception {
    List<Object> outcomes =
        onRanks(
            2,
            c -> {
              try {
                c.allReduceInto(ReduceOp.MIN, new long[2], new long[3], "sync");
                return "no error";
              } catch (IllegalArgumentException expected) {
                assertThat(expected).hasMessageContaining("result.length=3");
              }
              long[] values = new long[c.rank() + 1];
              c.allReduceInto(ReduceOp.MIN, values, values, "sync");
              return "no error";
            });
    assertThat(outcomes).hasSize(2);
    for (Object o : outcomes) {
      assertThat(o).isInstanceOf(CollectiveDesyncException.class);
      assertThat(((Exception) o).getMessage())
          .contains("rank 0: allReduce(MIN, length=1) tag 'sync' seq 0")
          .contains("rank 1: allReduce(MIN, length=2) tag 'sync' seq 0");
    }
  }

  @Test
  void fingerprintSeparatesCallsAndTags() {
    assertThat(GuardedCollective.fingerprint("barrier", "a"))
        .isNotEqualTo(GuardedCollective.fingerprint("barrier", "b"))
        .isNotEqualTo(GuardedCollective.fingerprint("broadcast(root=0)", "a"))
        .isEqualTo(GuardedCollective.fingerprint("barrier", "a"));
  }
}
