package io.kvtier.backend.cpu;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferHandle;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Measures load-backs of the {@code cpu} transfer engine against plain {@link MemorySegment#copy}
 * calls in the same run:
 *
 * <pre>{@code
 * java --module-path backend-cpu/target/classes:modules/spi/target/classes \
 *   -m io.kvtier.backend.cpu/io.kvtier.backend.cpu.CpuCopyBenchmark [pages=32] [rounds=25]
 * }</pre>
 *
 * <p>The layout is a realistic one (32 layers, 8 KV heads, head dim 128, 2-byte elements, 16
 * tokens per page: 64 KiB blocks, 2 MiB pages). A load-back copies {@code pages} random host
 * pages into random device pages of pools four times larger, as one batch per layer (how the
 * engine streams a load-back), from a layer-first or a page-first host pool into a layer-first
 * device pool (kvtier's default). It is compared with one contiguous copy of the same bytes and
 * with the engine's own block copies run synchronously on the calling thread (what the copier
 * threads add or cost). Then a load-back is timed while a backup of the same size, submitted just
 * before it, runs, for {@code cpu.copy-threads} 1 and 2: total time and the time until layer 0 is
 * loaded (when the model may start).
 *
 * <p>Every round runs every variant once, in the same order, so that load from other processes
 * falls on all of them; each figure is the median over {@code rounds} after two warm-up rounds.
 * No assertion: the figures are for the README and reports.
 */
public final class CpuCopyBenchmark {

  private static final KvLayout LAYOUT = new KvLayout(32, 8, 128, 2, 16);
  private static final int SMALL_BATCHES = 256;

  private final int pages;
  private final int poolPages;
  private final Random random = new Random(42);
  private final Map<String, List<Long>> nanos = new LinkedHashMap<>();

  private CpuCopyBenchmark(int pages) {
    this.pages = pages;
    this.poolPages = 4 * pages;
  }

  /**
   * Runs the benchmark and prints a table.
   *
   * @param args {@code pages=N} (pages per load-back, default 32) and {@code rounds=N} (default
   *     25)
   * @throws InterruptedException if interrupted while awaiting a copy
   */
  public static void main(String[] args) throws InterruptedException {
    int pages = 32;
    int rounds = 25;
    for (String arg : args) {
      String[] kv = arg.split("=", 2);
      switch (kv[0]) {
        case "pages" -> pages = Integer.parseInt(kv[1]);
        case "rounds" -> rounds = Integer.parseInt(kv[1]);
        default ->
            throw new IllegalArgumentException(
                "unknown argument '" + arg + "': use pages=N rounds=N");
      }
    }
    new CpuCopyBenchmark(pages).run(rounds, System.out);
  }

  private void run(int rounds, PrintStream out) throws InterruptedException {
    long bytes = LAYOUT.pageBytes() * pages;
    BackendContext one = context(1);
    BackendContext two = context(2);
    try (Arena arena = Arena.ofShared();
        CpuDeviceMemory device = device(two);
        CpuHostMemory layerFirst = host(MemoryLayout.LAYER_FIRST, two);
        CpuHostMemory pageFirst = host(MemoryLayout.PAGE_FIRST, two);
        CpuDeviceMemory deviceOne = device(one);
        CpuHostMemory hostOne = host(MemoryLayout.LAYER_FIRST, one)) {
      MemorySegment src = arena.allocate(bytes, 4096).fill((byte) 1);
      MemorySegment dst = arena.allocate(bytes, 4096).fill((byte) 0);
      CpuTransferEngine engineLayerFirst = device.transferEngine(layerFirst);
      CpuTransferEngine enginePageFirst = device.transferEngine(pageFirst);
      CpuTransferEngine engineTwo = device.transferEngine(layerFirst);
      CpuTransferEngine engineOne = deviceOne.transferEngine(hostOne);
      for (int round = -2; round < rounds; round++) {
        boolean record = round >= 0;
        long start = System.nanoTime();
        MemorySegment.copy(src, 0, dst, 0, bytes);
        add(record, "contiguous", System.nanoTime() - start);
        for (CpuHostMemory host : List.of(layerFirst, pageFirst)) {
          String name = host.spec().memoryLayout() == MemoryLayout.LAYER_FIRST ? "lf" : "pf";
          CpuBlockCopier copier = new CpuBlockCopier(device.pool(), host);
          List<TransferBatch> batches = loadBack(shuffled(), shuffled());
          start = System.nanoTime();
          for (TransferBatch b : batches) {
            copier.copy(b);
          }
          add(record, "caller " + name, System.nanoTime() - start);
          CpuTransferEngine engine = host == layerFirst ? engineLayerFirst : enginePageFirst;
          batches = loadBack(shuffled(), shuffled());
          start = System.nanoTime();
          TransferHandle last = null;
          for (TransferBatch b : batches) {
            last = engine.submit(b);
          }
          last.await();
          add(record, "engine " + name, System.nanoTime() - start);
        }
        smallBatches(record, device.pool(), layerFirst, engineLayerFirst);
        underBackup(record, "threads 2", engineTwo);
        underBackup(record, "threads 1", engineOne);
      }
      engineLayerFirst.close();
      enginePageFirst.close();
      engineTwo.close();
      engineOne.close();
    }
    print(out, bytes, rounds);
  }

  /** {@value #SMALL_BATCHES} batches of one block each: the engine's cost per batch. */
  private void smallBatches(
      boolean record, CpuPool device, CpuHostMemory host, CpuTransferEngine engine)
      throws InterruptedException {
    List<TransferBatch> batches = new ArrayList<>();
    int[] to = shuffled();
    int[] from = shuffled();
    for (int i = 0; i < SMALL_BATCHES; i++) {
      batches.add(
          TransferBatch.oneLayer(
              TransferDirection.HOST_TO_DEVICE,
              new int[] {to[i % poolPages]},
              new int[] {from[i % poolPages]},
              i % LAYOUT.layers()));
    }
    CpuBlockCopier copier = new CpuBlockCopier(device, host);
    long start = System.nanoTime();
    for (TransferBatch b : batches) {
      copier.copy(b);
    }
    add(record, "small caller", System.nanoTime() - start);
    start = System.nanoTime();
    TransferHandle last = null;
    for (TransferBatch b : batches) {
      last = engine.submit(b);
    }
    last.await();
    add(record, "small engine", System.nanoTime() - start);
  }

  /** A load-back submitted right after a backup of the same size, on disjoint pages. */
  private void underBackup(boolean record, String name, CpuTransferEngine engine)
      throws InterruptedException {
    int[] device = shuffled();
    int[] host = shuffled();
    TransferHandle backup =
        engine.submit(
            TransferBatch.allLayers(
                TransferDirection.DEVICE_TO_HOST,
                Arrays.copyOfRange(device, pages, 2 * pages),
                Arrays.copyOfRange(host, pages, 2 * pages)));
    long start = System.nanoTime();
    List<TransferHandle> handles = new ArrayList<>();
    for (TransferBatch b : loadBack(device, host)) {
      handles.add(engine.submit(b));
    }
    handles.getFirst().await();
    long firstLayer = System.nanoTime() - start;
    handles.getLast().await();
    long all = System.nanoTime() - start;
    backup.await();
    add(record, name + " first layer", firstLayer);
    add(record, name + " all layers", all);
  }

  private void print(PrintStream out, long bytes, int rounds) {
    out.printf(
        Locale.ROOT,
        "load-back of %d pages = %d MiB (%d layers x %d KiB blocks each), median of %d rounds%n",
        pages,
        bytes >> 20,
        LAYOUT.layers(),
        LAYOUT.pageBytesPerLayer() / 1024,
        rounds);
    double contiguous = bytes / median("contiguous");
    out.printf(Locale.ROOT, "%-58s %6.2f GB/s%n", "one contiguous MemorySegment.copy", contiguous);
    for (String name : List.of("lf", "pf")) {
      String host = name.equals("lf") ? "layer-first host" : "page-first host";
      double caller = bytes / median("caller " + name);
      double engine = bytes / median("engine " + name);
      out.printf(
          Locale.ROOT,
          "%-58s %6.2f GB/s%n",
          "same block copies on the calling thread, " + host,
          caller);
      out.printf(
          Locale.ROOT,
          "%-58s %6.2f GB/s (%.0f%% of contiguous, %.0f%% of calling thread)%n",
          "engine load-back, one batch per layer, " + host,
          engine,
          100 * engine / contiguous,
          100 * engine / caller);
    }
    out.printf(
        Locale.ROOT,
        "%-58s %6.1f us per batch (calling thread: %.1f us)%n",
        SMALL_BATCHES + " one-block batches back to back, engine",
        median("small engine") / SMALL_BATCHES / 1e3,
        median("small caller") / SMALL_BATCHES / 1e3);
    for (String name : List.of("threads 1", "threads 2")) {
      out.printf(
          Locale.ROOT,
          "%-58s %6.2f GB/s, layer 0 ready after %.0f us%n",
          "load-back behind an equal backup, cpu.copy-threads=" + name.substring(8),
          bytes / median(name + " all layers"),
          median(name + " first layer") / 1e3);
    }
  }

  private List<TransferBatch> loadBack(int[] device, int[] host) {
    int[] to = Arrays.copyOf(device, pages);
    int[] from = Arrays.copyOf(host, pages);
    List<TransferBatch> batches = new ArrayList<>();
    for (int layer = 0; layer < LAYOUT.layers(); layer++) {
      batches.add(TransferBatch.oneLayer(TransferDirection.HOST_TO_DEVICE, to, from, layer));
    }
    return batches;
  }

  private void add(boolean record, String name, long elapsed) {
    if (record) {
      nanos.computeIfAbsent(name, k -> new ArrayList<>()).add(elapsed);
    }
  }

  private double median(String name) {
    long[] sorted = nanos.get(name).stream().mapToLong(Long::longValue).sorted().toArray();
    return sorted[sorted.length / 2];
  }

  private int[] shuffled() {
    int[] a = new int[poolPages];
    for (int i = 0; i < poolPages; i++) {
      a[i] = i;
    }
    for (int i = poolPages - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
    return a;
  }

  private CpuDeviceMemory device(BackendContext context) {
    return new CpuDeviceMemoryProvider()
        .open(new PoolSpec(LAYOUT, poolPages, MemoryLayout.LAYER_FIRST), context);
  }

  private CpuHostMemory host(MemoryLayout memoryLayout, BackendContext context) {
    return new CpuHostMemoryProvider().open(new PoolSpec(LAYOUT, poolPages, memoryLayout), context);
  }

  private static BackendContext context(int copyThreads) {
    return new BackendContext(
        0,
        Map.of(CpuConfig.COPY_THREADS, Integer.toString(copyThreads)),
        TimeSource.SYSTEM,
        BackendMetrics.NOOP);
  }
}
