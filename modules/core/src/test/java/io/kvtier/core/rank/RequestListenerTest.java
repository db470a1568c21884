package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The request milestones a {@link RankEngine} reports: the same on every rank, once each per
 * request, in tick order, with the hit tokens the counters count and the tick the prefill ends.
 */
@Timeout(60)
class RequestListenerTest {
  private static final CacheConfig CACHE = CacheConfig.of(4, 32, 64);
  private static final int CHUNK = 8;
  private static final int PROMPT = 14;
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(CHUNK).withMaxRunning(2);

  /** One call of the listener. */
  record Event(String kind, long tick, long id, long a, long b) {}

  /** Writes every call down. */
  static final class Recorder implements RequestListener {
    final List<Event> events = new ArrayList<>();

    @Override
    public void arrived(long tick, long id, int promptTokens) {
      events.add(new Event("arrived", tick, id, promptTokens, 0));
    }

    @Override
    public void admitted(long tick, long id, int deviceHitTokens, int hostHitTokens) {
      events.add(new Event("admitted", tick, id, deviceHitTokens, hostHitTokens));
    }

    @Override
    public void prefilled(long tick, long id) {
      events.add(new Event("prefilled", tick, id, 0, 0));
    }

    @Override
    public void ended(long tick, long id, RequestOutcome outcome) {
      events.add(new Event("ended:" + outcome, tick, id, 0, 0));
    }
  }

  /** A prompt whose first 8 tokens are shared by every request of the same parity. */
  private static RankRequest request(long id, int length) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = i < 8 ? 100 * (int) (id % 2) + i : 1000 + 37 * (int) id + i;
    }
    return RankRequest.of(id, p, 2);
  }

  private static TickCommands commands(long tick) {
    return switch ((int) tick) {
      // 9 needs 50 pages of a 32-page pool: rejected once it reaches the head of the queue
      case 0 ->
          TickCommands.arrive(
              List.of(
                  request(1, PROMPT),
                  request(2, PROMPT),
                  request(3, PROMPT),
                  request(4, PROMPT),
                  request(9, 200)));
      case 1 -> new TickCommands(List.of(), new long[] {4}, false);
      case 12 -> TickCommands.arrive(List.of(request(5, PROMPT), request(6, PROMPT)));
      case 13 -> TickCommands.END;
      default -> TickCommands.NONE;
    };
  }

  @Test
  void everyRankReportsTheSameMilestonesOncePerRequest() throws Exception {
    try (RankHarness h = new RankHarness(2, CACHE, ENGINE)) {
      List<Object> out =
          h.onRanks(
              (rank, e) -> {
                Recorder recorder = new Recorder();
                e.setRequestListener(recorder);
                for (long t = 0; !e.isDrained(); t++) {
                  assertThat(t).as("ticks to drain").isLessThan(200);
                  h.clocks.get(rank).set(t * RankHarness.TICK_NANOS);
                  e.tick(rank == 0 ? commands(t) : null);
                }
                return recorder.events;
              });
      assertThat(out.get(1)).isEqualTo(out.get(0));
      @SuppressWarnings("unchecked")
      List<Event> events = (List<Event>) out.get(0);
      Map<Long, List<Event>> byId = new TreeMap<>();
      for (Event e : events) {
        byId.computeIfAbsent(e.id(), k -> new ArrayList<>()).add(e);
      }
      assertThat(byId.keySet()).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 9L);
      assertThat(kinds(byId.get(4L))).containsExactly("arrived", "ended:ABORTED");
      assertThat(kinds(byId.get(9L))).containsExactly("arrived", "ended:REJECTED");

      RankEngineStats stats = h.engines.getFirst().stats();
      long device = 0;
      long host = 0;
      for (long id : new long[] {1, 2, 3, 5, 6}) {
        List<Event> life = byId.get(id);
        assertThat(kinds(life))
            .containsExactly("arrived", "admitted", "prefilled", "ended:FINISHED");
        assertThat(life).extracting(Event::tick).isSorted();
        assertThat(life.getFirst().a()).isEqualTo(PROMPT);
        Event admitted = life.get(1);
        device += admitted.a();
        host += admitted.b();
        if (admitted.b() == 0) {
          // nothing to load back: the prefill starts at admission, one chunk per tick
          long chunks = (PROMPT - admitted.a() + CHUNK - 1) / CHUNK;
          assertThat(life.get(2).tick())
              .as("prefilled tick of %d", id)
              .isEqualTo(admitted.tick() + chunks - 1);
        }
      }
      assertThat(device).isEqualTo(stats.deviceHitTokens());
      assertThat(host).isEqualTo(stats.hostHitTokens());
      // 5 and 6 share their first 8 tokens with the finished 1 to 3
      assertThat(device + host).isPositive();
    }
  }

  @Test
  void aListenerOfTheFourArgumentAdmissionSeesL3HitsAsHostHits() {
    Recorder recorder = new Recorder();

    // What the engine calls: device 5, host 2, L3 4.
    recorder.admitted(7, 3, 5, 2, 4);

    assertThat(recorder.events).containsExactly(new Event("admitted", 7, 3, 5, 6));
  }

  @Test
  void aNullListenerIsRefusedNamingTheNoOp() throws Exception {
    try (RankHarness h = new RankHarness(1, CACHE, ENGINE)) {
      assertThatThrownBy(() -> h.engines.getFirst().setRequestListener(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("RequestListener.NONE");
    }
  }

  private static List<String> kinds(List<Event> life) {
    return life.stream().map(Event::kind).toList();
  }
}
