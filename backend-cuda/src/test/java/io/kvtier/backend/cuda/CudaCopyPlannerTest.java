package io.kvtier.backend.cuda;

import static io.kvtier.spi.MemoryLayout.LAYER_FIRST;
import static io.kvtier.spi.MemoryLayout.PAGE_FIRST;
import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@ExtendWith(SeedExtension.class)
class CudaCopyPlannerTest {

  private static final KvLayout LAYOUT = new KvLayout(4, 2, 8, 2, 16);
  private static final long BLOCK = LAYOUT.pageBytesPerLayer();
  private static final long NO_STRIDES = 0;
  private static final long ANY_PITCH = Long.MAX_VALUE;

  @Test
  void randomBatchesCopyExactlyWhatPerBlockCopiesWouldAndContiguousRunsAreMinimal(Random random) {
    for (int round = 0; round < TestSeeds.scaled(1000); round++) {
      KvLayout layout =
          new KvLayout(
              1 + random.nextInt(5),
              1,
              1 + random.nextInt(3),
              1 + random.nextInt(2),
              1 + random.nextInt(3));
      PoolSpec device = new PoolSpec(layout, 1 + random.nextInt(12), pick(random));
      PoolSpec host = new PoolSpec(layout, 1 + random.nextInt(12), pick(random));
      TransferBatch batch = randomBatch(random, device, host);
      String where = "round " + round + " " + batch + " device=" + device + " host=" + host;

      List<CudaCopyRun> contiguous = CudaCopyPlanner.plan(batch, device, host, NO_STRIDES);
      assertThat(contiguous).as(where).allSatisfy(r -> assertThat(r.isContiguous()).isTrue());
      assertThat(copiedBlocks(contiguous, batch.direction(), layout))
          .as("blocks of the contiguous plan, %s", where)
          .isEqualTo(perBlockReference(batch, device, host));
      assertThat(contiguous.size())
          .as("contiguous runs of %s", where)
          .isEqualTo(maximalChains(perBlockReference(batch, device, host), layout));

      long maxPitch =
          random.nextBoolean() ? ANY_PITCH : layout.pageBytesPerLayer() * (1 + random.nextInt(13));
      List<CudaCopyRun> strided = CudaCopyPlanner.plan(batch, device, host, maxPitch);
      assertThat(copiedBlocks(strided, batch.direction(), layout))
          .as("blocks of the strided plan (maxPitch=%d), %s", maxPitch, where)
          .isEqualTo(perBlockReference(batch, device, host));
      assertThat(strided.size())
          .as("strided runs of %s", where)
          .isLessThanOrEqualTo(contiguous.size());
      assertThat(strided)
          .as("pitches of the strided runs of %s", where)
          .filteredOn(r -> !r.isContiguous())
          .allSatisfy(
              r -> {
                assertThat(r.devicePitch()).isLessThanOrEqualTo(maxPitch);
                assertThat(r.hostPitch()).isLessThanOrEqualTo(maxPitch);
              });
    }
  }

  @Test
  void pageFirstPoolsCopyConsecutivePagesInOneRun() {
    PoolSpec device = new PoolSpec(LAYOUT, 10, PAGE_FIRST);
    PoolSpec host = new PoolSpec(LAYOUT, 12, PAGE_FIRST);
    TransferBatch batch =
        TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {2, 3, 4}, new int[] {5, 6, 7});
    assertThat(CudaCopyPlanner.plan(batch, device, host, ANY_PITCH))
        .containsExactly(
            CudaCopyRun.contiguous(
                2 * LAYOUT.pageBytes(), 5 * LAYOUT.pageBytes(), 3 * LAYOUT.pageBytes()));
  }

  @Test
  void layerFirstPoolsCopyConsecutivePagesInOneRunPerLayerOrOneStridedRun() {
    PoolSpec device = new PoolSpec(LAYOUT, 10, LAYER_FIRST);
    PoolSpec host = new PoolSpec(LAYOUT, 12, LAYER_FIRST);
    TransferBatch batch =
        TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {2, 3, 4}, new int[] {5, 6, 7});
    assertThat(CudaCopyPlanner.plan(batch, device, host, NO_STRIDES))
        .containsExactly(
            CudaCopyRun.contiguous(2 * BLOCK, 5 * BLOCK, 3 * BLOCK),
            CudaCopyRun.contiguous(12 * BLOCK, 17 * BLOCK, 3 * BLOCK),
            CudaCopyRun.contiguous(22 * BLOCK, 29 * BLOCK, 3 * BLOCK),
            CudaCopyRun.contiguous(32 * BLOCK, 41 * BLOCK, 3 * BLOCK));
    assertThat(CudaCopyPlanner.plan(batch, device, host, ANY_PITCH))
        .containsExactly(
            new CudaCopyRun(2 * BLOCK, 5 * BLOCK, 3 * BLOCK, 4, 10 * BLOCK, 12 * BLOCK));
  }

  @ParameterizedTest
  @EnumSource(MemoryLayout.class)
  void aWholePoolCopiedInPlaceIsOneRun(MemoryLayout memoryLayout) {
    PoolSpec pool = new PoolSpec(LAYOUT, 6, memoryLayout);
    int[] pages = {5, 4, 3, 2, 1, 0};
    TransferBatch batch = TransferBatch.allLayers(HOST_TO_DEVICE, pages, pages);
    for (long maxPitch : new long[] {NO_STRIDES, ANY_PITCH}) {
      assertThat(CudaCopyPlanner.plan(batch, pool, pool, maxPitch))
          .as("maxPitch=%d", maxPitch)
          .containsExactly(CudaCopyRun.contiguous(0, 0, pool.bytes()));
    }
  }

  @Test
  void mixedLayoutsCopyEachPageWithOneStridedRun() {
    PoolSpec device = new PoolSpec(LAYOUT, 10, LAYER_FIRST);
    PoolSpec host = new PoolSpec(LAYOUT, 12, PAGE_FIRST);
    TransferBatch batch =
        TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {7, 1}, new int[] {3, 9});
    assertThat(CudaCopyPlanner.plan(batch, device, host, ANY_PITCH))
        .containsExactly(
            new CudaCopyRun(BLOCK, 9 * LAYOUT.pageBytes(), BLOCK, 4, 10 * BLOCK, BLOCK),
            new CudaCopyRun(7 * BLOCK, 3 * LAYOUT.pageBytes(), BLOCK, 4, 10 * BLOCK, BLOCK));
    assertThat(CudaCopyPlanner.plan(batch, device, host, NO_STRIDES)).hasSize(8);
  }

  @Test
  void aPitchAboveTheDeviceMaximumFallsBackToContiguousRuns() {
    PoolSpec device = new PoolSpec(LAYOUT, 10, LAYER_FIRST);
    PoolSpec host = new PoolSpec(LAYOUT, 12, PAGE_FIRST);
    TransferBatch batch = TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {4}, new int[] {0});
    assertThat(CudaCopyPlanner.plan(batch, device, host, 10 * BLOCK - 1))
        .hasSize(LAYOUT.layers())
        .allSatisfy(r -> assertThat(r.isContiguous()).isTrue());
    assertThat(CudaCopyPlanner.plan(batch, device, host, 10 * BLOCK)).hasSize(1);
  }

  @Test
  void oneLayerOfConsecutivePagesIsOneRun() {
    PoolSpec device = new PoolSpec(LAYOUT, 10, LAYER_FIRST);
    PoolSpec host = new PoolSpec(LAYOUT, 12, LAYER_FIRST);
    TransferBatch batch =
        TransferBatch.oneLayer(HOST_TO_DEVICE, new int[] {6, 7, 8}, new int[] {0, 1, 2}, 3);
    assertThat(CudaCopyPlanner.plan(batch, device, host, ANY_PITCH))
        .containsExactly(CudaCopyRun.contiguous(36 * BLOCK, 36 * BLOCK, 3 * BLOCK));
  }

  @Test
  void ofSeveralCopiesToOnePageTheLastWins() {
    PoolSpec device = new PoolSpec(LAYOUT, 10, PAGE_FIRST);
    PoolSpec host = new PoolSpec(LAYOUT, 12, PAGE_FIRST);
    TransferBatch batch =
        TransferBatch.oneLayer(HOST_TO_DEVICE, new int[] {3, 1, 3}, new int[] {1, 4, 2}, 0);
    assertThat(CudaCopyPlanner.destinationOrder(batch)).containsExactly(1, 2);
    assertThat(CudaCopyPlanner.plan(batch, device, host, ANY_PITCH))
        .containsExactly(
            CudaCopyRun.contiguous(LAYOUT.pageBytes(), 4 * LAYOUT.pageBytes(), BLOCK),
            CudaCopyRun.contiguous(3 * LAYOUT.pageBytes(), 2 * LAYOUT.pageBytes(), BLOCK));
  }

  @Test
  void anEmptyBatchHasNoRuns() {
    PoolSpec pool = new PoolSpec(LAYOUT, 4, LAYER_FIRST);
    TransferBatch batch = TransferBatch.allLayers(DEVICE_TO_HOST, new int[0], new int[0]);
    assertThat(CudaCopyPlanner.plan(batch, pool, pool, ANY_PITCH)).isEmpty();
  }

  private static MemoryLayout pick(Random random) {
    return random.nextBoolean() ? LAYER_FIRST : PAGE_FIRST;
  }

  private static TransferBatch randomBatch(Random random, PoolSpec device, PoolSpec host) {
    int n = random.nextInt(2 * Math.max(device.pages(), host.pages()) + 1);
    int[] devicePages = new int[n];
    int[] hostPages = new int[n];
    boolean runs = random.nextBoolean();
    for (int i = 0; i < n; i++) {
      // Half the batches favour consecutive pages, which is where merging matters.
      devicePages[i] =
          runs && i > 0 && random.nextInt(4) > 0
              ? (devicePages[i - 1] + 1) % device.pages()
              : random.nextInt(device.pages());
      hostPages[i] =
          runs && i > 0 && random.nextInt(4) > 0
              ? (hostPages[i - 1] + 1) % host.pages()
              : random.nextInt(host.pages());
    }
    TransferDirection direction = random.nextBoolean() ? DEVICE_TO_HOST : HOST_TO_DEVICE;
    OptionalInt layer =
        random.nextInt(3) == 0
            ? OptionalInt.of(random.nextInt(device.layout().layers()))
            : OptionalInt.empty();
    return new TransferBatch(direction, devicePages, hostPages, layer);
  }

  /**
   * What copying block by block in batch order leaves: destination block offset to the source
   * block offset that was copied into it last.
   */
  private static Map<Long, Long> perBlockReference(
      TransferBatch batch, PoolSpec device, PoolSpec host) {
    Map<Long, Long> blocks = new LinkedHashMap<>();
    int first = batch.layer().orElse(0);
    int end = batch.layer().isPresent() ? first + 1 : device.layout().layers();
    for (int i = 0; i < batch.size(); i++) {
      for (int layer = first; layer < end; layer++) {
        long d =
            device
                .memoryLayout()
                .blockOffset(device.layout(), device.pages(), batch.devicePage(i), layer);
        long h =
            host.memoryLayout().blockOffset(host.layout(), host.pages(), batch.hostPage(i), layer);
        if (batch.direction() == DEVICE_TO_HOST) {
          blocks.put(h, d);
        } else {
          blocks.put(d, h);
        }
      }
    }
    return blocks;
  }

  /** The blocks the runs copy, destination to source; fails if two runs write one block. */
  private static Map<Long, Long> copiedBlocks(
      List<CudaCopyRun> runs, TransferDirection direction, KvLayout layout) {
    long block = layout.pageBytesPerLayer();
    Map<Long, Long> blocks = new LinkedHashMap<>();
    for (CudaCopyRun run : runs) {
      assertThat(run.width() % block).as("width of %s", run).isZero();
      for (long row = 0; row < run.height(); row++) {
        for (long at = 0; at < run.width(); at += block) {
          long d = run.deviceOffset() + row * run.devicePitch() + at;
          long h = run.hostOffset() + row * run.hostPitch() + at;
          long dst = direction == DEVICE_TO_HOST ? h : d;
          long src = direction == DEVICE_TO_HOST ? d : h;
          assertThat(blocks.put(dst, src))
              .as("block at %d written twice by %s", dst, runs)
              .isNull();
        }
      }
    }
    return blocks;
  }

  /**
   * The fewest contiguous runs that copy these blocks: one per block whose predecessor on both
   * sides is not copied into the block just before it.
   */
  private static int maximalChains(Map<Long, Long> blocks, KvLayout layout) {
    long block = layout.pageBytesPerLayer();
    int chains = 0;
    for (Map.Entry<Long, Long> e : blocks.entrySet()) {
      Long before = blocks.get(e.getKey() - block);
      if (before == null || before != e.getValue() - block) {
        chains++;
      }
    }
    return chains;
  }
}
