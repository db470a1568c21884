package io.kvtier.backend.cuda;

import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Turns a batch of page copies into as few copy calls as the two pools' layouts allow. A pure
 * function of the batch and the two pool shapes; the transfer engine issues one driver call per
 * {@link CudaCopyRun}.
 *
 * <p>Why: a batch names (device page, host page) pairs, and each pair is one (page, layer) block
 * per layer, {@code pageBytesPerLayer} bytes each: 32 layers of 16 tokens make blocks of 64 KiB,
 * for which the fixed cost of a driver call (a few microseconds) is as large as the transfer
 * itself. Blocks that are adjacent on both sides are merged into one contiguous run, and the
 * blocks of one page, a fixed stride apart in a layer-first pool, into one strided run.
 *
 * <p>How:
 *
 * <ol>
 *   <li>Copies are ordered by destination page, and of several copies to one destination page
 *       only the last is kept: within a batch every copy reads one pool and writes the other, so
 *       the last write wins whatever the order, and the kept copies write disjoint blocks.
 *   <li>Contiguous plan: the blocks are visited in ascending destination offset (layer-major for
 *       a layer-first destination, page-major for a page-first one, which needs no sort), and a
 *       block extends the current run when it follows it on both sides. Destination ranges are
 *       disjoint and of equal size, so a block's only possible predecessor is the block visited
 *       just before it: this yields the fewest contiguous runs.
 *   <li>Strided plan, when a batch spans several layers, at least one pool is layer-first and
 *       both strides fit the device's maximum pitch: each copy is one run of {@code layers} rows
 *       (one per layer); runs of consecutive pages on both sides widen into one; a run whose rows
 *       touch on both sides becomes contiguous.
 * </ol>
 */
final class CudaCopyPlanner {

  private CudaCopyPlanner() {}

  /**
   * Plans a batch whose pages and layer are within both pools.
   *
   * @param batch the batch
   * @param device the device pool's shape
   * @param host the host pool's shape; same {@link KvLayout} as the device's
   * @param maxPitch the largest row pitch a strided copy may have, or 0 for contiguous runs only
   * @return the runs, each copying bytes that no other run writes
   */
  static List<CudaCopyRun> plan(
      TransferBatch batch, PoolSpec device, PoolSpec host, long maxPitch) {
    KvLayout layout = device.layout();
    if (!host.layout().equals(layout)) {
      throw new IllegalArgumentException(
          "host layout=" + host.layout() + " differs from device layout=" + layout);
    }
    int[] order = destinationOrder(batch);
    int firstLayer = batch.layer().orElse(0);
    int layers = batch.layer().isPresent() ? 1 : layout.layers();
    long block = layout.pageBytesPerLayer();
    long devicePitch = layerStride(device);
    long hostPitch = layerStride(host);
    boolean strided =
        layers > 1
            && maxPitch > 0
            && (devicePitch != block || hostPitch != block)
            && devicePitch <= maxPitch
            && hostPitch <= maxPitch;
    return strided
        ? planStrided(batch, order, device, host, firstLayer, layers)
        : planContiguous(batch, order, device, host, firstLayer, layers);
  }

  /**
   * The indexes of the batch's copies to keep, in ascending destination page: of copies to the
   * same destination page, the last one.
   */
  static int[] destinationOrder(TransferBatch batch) {
    int n = batch.size();
    boolean toHost = batch.direction() == TransferDirection.DEVICE_TO_HOST;
    int[] order = new int[n];
    boolean ascending = true;
    for (int i = 0; i < n; i++) {
      order[i] = i;
      ascending &= i == 0 || destination(batch, toHost, i) > destination(batch, toHost, i - 1);
    }
    if (ascending) {
      return order;
    }
    // page * n + i sorts by page, then by batch index; it fits: page < 2^31 and n <= 2^31.
    long[] keys = new long[n];
    for (int i = 0; i < n; i++) {
      keys[i] = (long) destination(batch, toHost, i) * n + i;
    }
    Arrays.sort(keys);
    int kept = 0;
    for (int k = 0; k < n; k++) {
      boolean lastOfItsPage = k == n - 1 || keys[k + 1] / n != keys[k] / n;
      if (lastOfItsPage) {
        order[kept++] = (int) (keys[k] % n);
      }
    }
    return Arrays.copyOf(order, kept);
  }

  private static int destination(TransferBatch batch, boolean toHost, int i) {
    return toHost ? batch.hostPage(i) : batch.devicePage(i);
  }

  /** Bytes from one layer's block of a page to the next layer's block of the same page. */
  static long layerStride(PoolSpec pool) {
    long block = pool.layout().pageBytesPerLayer();
    return pool.memoryLayout() == MemoryLayout.LAYER_FIRST ? block * pool.pages() : block;
  }

  private static long offset(PoolSpec pool, int page, int layer) {
    return pool.memoryLayout().blockOffset(pool.layout(), pool.pages(), page, layer);
  }

  private static List<CudaCopyRun> planContiguous(
      TransferBatch batch,
      int[] order,
      PoolSpec device,
      PoolSpec host,
      int firstLayer,
      int layers) {
    boolean toHost = batch.direction() == TransferDirection.DEVICE_TO_HOST;
    PoolSpec destination = toHost ? host : device;
    long block = device.layout().pageBytesPerLayer();
    Runs runs = new Runs();
    if (destination.memoryLayout() == MemoryLayout.LAYER_FIRST && layers > 1) {
      for (int layer = firstLayer; layer < firstLayer + layers; layer++) {
        for (int i : order) {
          runs.add(
              offset(device, batch.devicePage(i), layer),
              offset(host, batch.hostPage(i), layer),
              block);
        }
      }
    } else {
      for (int i : order) {
        for (int layer = firstLayer; layer < firstLayer + layers; layer++) {
          runs.add(
              offset(device, batch.devicePage(i), layer),
              offset(host, batch.hostPage(i), layer),
              block);
        }
      }
    }
    return runs.finish();
  }

  private static List<CudaCopyRun> planStrided(
      TransferBatch batch,
      int[] order,
      PoolSpec device,
      PoolSpec host,
      int firstLayer,
      int layers) {
    long block = device.layout().pageBytesPerLayer();
    long devicePitch = layerStride(device);
    long hostPitch = layerStride(host);
    long widest = Math.min(devicePitch, hostPitch);
    Runs runs = new Runs();
    long deviceStart = -1;
    long hostStart = -1;
    long width = 0;
    for (int i : order) {
      long deviceOffset = offset(device, batch.devicePage(i), firstLayer);
      long hostOffset = offset(host, batch.hostPage(i), firstLayer);
      boolean widens =
          width > 0
              && deviceOffset == deviceStart + width
              && hostOffset == hostStart + width
              && width + block <= widest;
      if (widens) {
        width += block;
        continue;
      }
      if (width > 0) {
        runs.addRows(deviceStart, hostStart, width, layers, devicePitch, hostPitch);
      }
      deviceStart = deviceOffset;
      hostStart = hostOffset;
      width = block;
    }
    if (width > 0) {
      runs.addRows(deviceStart, hostStart, width, layers, devicePitch, hostPitch);
    }
    return runs.finish();
  }

  /** Collects runs, extending the open contiguous run while the next bytes follow it. */
  private static final class Runs {
    private final List<CudaCopyRun> done = new ArrayList<>();
    private long device = -1;
    private long host = -1;
    private long bytes;

    void add(long deviceOffset, long hostOffset, long length) {
      if (bytes > 0 && deviceOffset == device + bytes && hostOffset == host + bytes) {
        bytes += length;
        return;
      }
      flush();
      device = deviceOffset;
      host = hostOffset;
      bytes = length;
    }

    void addRows(
        long deviceOffset,
        long hostOffset,
        long width,
        long height,
        long devicePitch,
        long hostPitch) {
      if (height == 1 || (devicePitch == width && hostPitch == width)) {
        add(deviceOffset, hostOffset, width * height);
        return;
      }
      flush();
      done.add(new CudaCopyRun(deviceOffset, hostOffset, width, height, devicePitch, hostPitch));
    }

    List<CudaCopyRun> finish() {
      flush();
      return done;
    }

    private void flush() {
      if (bytes > 0) {
        done.add(CudaCopyRun.contiguous(device, host, bytes));
        bytes = 0;
      }
    }
  }
}
