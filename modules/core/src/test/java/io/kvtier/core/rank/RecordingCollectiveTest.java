package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The call log: equal sequences give equal hashes, and any difference changes the hash. */
@Timeout(30)
class RecordingCollectiveTest {

  private static RecordingCollective join(String group, int size, int rank) {
    CollectiveProvider local = RankHarness.provider(CollectiveProvider.class, "local");
    Collective c =
        local.join(
            CollectiveSpec.of(group, size, rank, Duration.ofSeconds(10)),
            BackendContext.defaults().withRank(rank));
    return new RecordingCollective(c);
  }

  @Test
  void ranksWithTheSameCallsHaveTheSameLogAndCounts() {
    // Own threads: the common pool may have a single thread on a small machine.
    ExecutorService threads = Executors.newFixedThreadPool(2);
    List<CompletableFuture<RecordingCollective>> ranks =
        List.of(0, 1).stream()
            .map(
                r ->
                    CompletableFuture.supplyAsync(
                        () -> {
                          RecordingCollective c = join("recording-same", 2, r);
                          c.broadcast(0, r == 0 ? new byte[] {1} : null, "recv");
                          c.allReduce(ReduceOp.MIN, new long[] {r, 5}, "sync");
                          c.barrier("end");
                          c.close();
                          return c;
                        },
                        threads))
            .toList();
    RecordingCollective a = ranks.get(0).join();
    RecordingCollective b = ranks.get(1).join();
    threads.shutdown();
    assertThat(a.scheduleHash()).isEqualTo(b.scheduleHash());
    assertThat(a.calls()).isEqualTo(3);
    assertThat(a.callsByTag()).isEqualTo(Map.of("end", 1L, "recv", 1L, "sync", 1L));
    assertThat(a.recentCalls())
        .extracting(Object::toString)
        .containsExactly(
            "#0 broadcast(root=0) 'recv'",
            "#1 allReduce(MIN, length=2) 'sync'",
            "#2 barrier 'end'");
  }

  @Test
  void anyDifferenceInOperationShapeOrTagChangesTheHash() {
    RecordingCollective one = join("recording-solo-1", 1, 0);
    RecordingCollective two = join("recording-solo-2", 1, 0);
    RecordingCollective three = join("recording-solo-3", 1, 0);
    RecordingCollective four = join("recording-solo-4", 1, 0);
    one.allReduce(ReduceOp.MIN, new long[2], "sync");
    RecordingCollective into = join("recording-solo-5", 1, 0);
    long[] values = new long[2];
    into.allReduceInto(ReduceOp.MIN, values, values, "sync");
    // The two forms of one call are logged alike, so that ranks may mix them.
    assertThat(into.scheduleHash()).isEqualTo(one.scheduleHash());
    assertThat(into.recentCalls())
        .extracting(Object::toString)
        .containsExactly("#0 allReduce(MIN, length=2) 'sync'");
    into.close();
    two.allReduce(ReduceOp.MAX, new long[2], "sync");
    three.allReduce(ReduceOp.MIN, new long[3], "sync");
    four.allReduce(ReduceOp.MIN, new long[2], "sync2");
    assertThat(
            List.of(
                one.scheduleHash(), two.scheduleHash(), three.scheduleHash(), four.scheduleHash()))
        .doesNotHaveDuplicates();
    for (RecordingCollective c : List.of(one, two, three, four)) {
      c.close();
    }
  }
}
