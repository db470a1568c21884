package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A model that batches decode ({@link ModelRunner#batchesDecode}) gets each tick's decode steps
 * together, one position each, layer by layer, on every rank alike, and the engine gives every
 * request the tokens it gets one step at a time: the same tokens in the same order per request.
 */
@Timeout(60)
class DecodeBatchTest {
  private static final CacheConfig CACHE = CacheConfig.of(4, 64, 128);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(8).withMaxRunning(4);

  /** Next token: a function of every token so far, so a wrong step shows in the output. */
  static class TokenModel implements ModelRunner {
    /** The one-at-a-time steps: request id, from, to (layer 0 only). */
    final List<long[]> steps = new ArrayList<>();

    @Override
    public int layers() {
      return 3;
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      if (layer == 0) {
        steps.add(new long[] {step.requestId(), step.from(), step.to()});
      }
    }

    @Override
    public int nextToken(ModelStep step) {
      long h = 17;
      for (int i = 0; i < step.to(); i++) {
        h = h * 31 + step.tokens()[i];
      }
      return (int) Math.floorMod(h, 400) + 1;
    }
  }

  /** The same model, batching its decode steps and writing each batch down. */
  static final class BatchingModel extends TokenModel {
    final List<Integer> batchSizes = new ArrayList<>();
    int nextLayer = -1;
    List<Long> batchIds = List.of();

    @Override
    public boolean batchesDecode() {
      return true;
    }

    @Override
    public void writeDecodeLayer(List<ModelStep> steps, int layer) {
      List<Long> ids = steps.stream().map(ModelStep::requestId).toList();
      if (layer == 0) {
        batchSizes.add(steps.size());
        batchIds = ids;
        nextLayer = 0;
      }
      assertThat(layer).isEqualTo(nextLayer);
      assertThat(ids).isEqualTo(batchIds);
      for (ModelStep s : steps) {
        assertThat(s.to()).as("one position per step").isEqualTo(s.from() + 1);
      }
      nextLayer++;
    }

    @Override
    public void nextDecodeTokens(List<ModelStep> steps, int[] tokens) {
      assertThat(nextLayer).as("every layer written first").isEqualTo(layers());
      for (int i = 0; i < steps.size(); i++) {
        tokens[i] = nextToken(steps.get(i));
      }
      nextLayer = -1;
    }
  }

  private static RankRequest request(long id, int length, int output) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = i < 8 ? 5 + i : 50 + 7 * (int) id + i;
    }
    return RankRequest.of(id, p, output);
  }

  private static TickCommands commands(long tick) {
    return switch ((int) tick) {
      case 0 ->
          TickCommands.arrive(
              List.of(request(1, 12, 9), request(2, 20, 6), request(3, 9, 12), request(4, 16, 3)));
      case 5 -> TickCommands.arrive(List.of(request(5, 24, 8), request(6, 12, 1)));
      case 6 -> TickCommands.END;
      default -> TickCommands.NONE;
    };
  }

  /** Each request's tokens, in the order the listener saw them, from rank 0 and rank 1. */
  private static List<Map<Long, List<Integer>>> run(java.util.function.IntFunction<TokenModel> m)
      throws Exception {
    List<TokenModel> models = new ArrayList<>(List.of(m.apply(0), m.apply(1)));
    try (RankHarness h = new RankHarness(2, CACHE, ENGINE, models::get, Duration.ofSeconds(20))) {
      List<Map<Long, List<Integer>>> result =
          h.tokensUntilDrained(DecodeBatchTest::commands, 300, (rank, tick) -> {});
      if (models.get(0) instanceof BatchingModel b) {
        assertThat(((BatchingModel) models.get(1)).batchSizes).isEqualTo(b.batchSizes);
        assertThat(b.batchSizes).as("a tick that decoded several requests together").contains(4);
        assertThat(b.steps)
            .as("no decode step one at a time")
            .noneMatch(c -> c[2] == c[1] + 1 && c[1] >= promptLength(c[0]));
        assertThat(b.steps).as("the prompts, one at a time").isNotEmpty();
      }
      return result;
    }
  }

  private static int promptLength(long id) {
    return switch ((int) id) {
      case 1, 6 -> 12;
      case 2 -> 20;
      case 3 -> 9;
      case 4 -> 16;
      default -> 24;
    };
  }

  @Test
  void batchedDecodeGivesEveryRequestTheTokensOfOneAtATime() throws Exception {
    List<Map<Long, List<Integer>>> single = run(r -> new TokenModel());
    List<Map<Long, List<Integer>>> batched = run(r -> new BatchingModel());

    assertThat(single.get(0)).hasSize(6);
    assertThat(single.get(0).get(3L)).hasSize(12);
    assertThat(batched.get(0)).isEqualTo(single.get(0));
    assertThat(batched.get(1)).isEqualTo(batched.get(0));
  }
}
