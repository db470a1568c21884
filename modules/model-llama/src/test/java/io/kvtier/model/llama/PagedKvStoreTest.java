package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.config.Parallelism;
import io.kvtier.gguf.GgufFile;
import io.kvtier.spi.KvLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The pages read back as written, from any first row (a layer that attends over a sliding window
 * reads its window's rows only): F32 and F16 pages, the whole model on one rank and one rank's
 * stripe of positions under context parallelism, first rows inside a page and on its start.
 */
class PagedKvStoreTest {
  private static final int PAGE = 4;
  private static final int LENGTH = 11;

  @TempDir Path dir;

  @ParameterizedTest(name = "{0}, rank {1} of {2} (cp)")
  @CsvSource({"F32, 0, 1", "F16, 0, 1", "F32, 1, 2", "F16, 0, 2"})
  void rowsFromAnyFirstOneReadBackAsWrittenAndTheRowsBeforeAreLeft(KvType type, int rank, int ranks)
      throws IOException {
    try (GgufFile file = GgufFile.open(SyntheticGguf.llama().write(dir.resolve("m.gguf"), 3))) {
      LlamaServingModel model = LlamaServingModel.of(file).withKvType(type);
      Parallelism cp = Parallelism.cp(1);
      KvLayout layout = model.rankLayout(model.kvLayout(PAGE), ranks, cp);
      try (KvTierBackends backends =
          KvTierBackends.open(ServedTiers.pools(layout, 16, model.vocabularySize()))) {
        PagedKvStore store =
            new PagedKvStore(backends.device(), model.hyperparameters(), rank, ranks, cp, type);
        Stripe stripe = ranks == 1 ? Stripe.WHOLE : new Stripe(rank, ranks, 1);
        store.bind(new int[] {5, 1, 7}, 3);
        int width = store.kvDim();
        int held = stripe.owned(LENGTH);
        float[][] k = new float[held][width];
        float[][] v = new float[held][width];
        for (int row = 0; row < held; row++) {
          for (int i = 0; i < width; i++) {
            // values F16 holds exactly, so that the rows read back equal these
            k[row][i] = row * 64 + i + 0.5f;
            v[row][i] = -(row * 64 + i) - 0.5f;
          }
          for (int l = 0; l < model.layers(); l++) {
            store.write(l, stripe.position(row), k[row], v[row], 0);
          }
        }
        for (int l = 0; l < model.layers(); l++) {
          for (int from = 0; from <= held; from++) {
            float[] keys = new float[held * width];
            float[] values = new float[held * width];
            Arrays.fill(keys, Float.NaN);
            Arrays.fill(values, Float.NaN);
            store.read(l, from, held, keys, values);
            for (int row = 0; row < held; row++) {
              float[] gotK = Arrays.copyOfRange(keys, row * width, (row + 1) * width);
              float[] gotV = Arrays.copyOfRange(values, row * width, (row + 1) * width);
              if (row < from) {
                assertThat(gotK)
                    .as("row %d before %d, layer %d", row, from, l)
                    .containsOnly(Float.NaN);
                assertThat(gotV).containsOnly(Float.NaN);
              } else {
                assertThat(gotK)
                    .as("row %d from %d, layer %d", row, from, l)
                    .containsExactly(k[row]);
                assertThat(gotV)
                    .as("row %d from %d, layer %d", row, from, l)
                    .containsExactly(v[row]);
              }
            }
          }
        }
      }
    }
  }
}
