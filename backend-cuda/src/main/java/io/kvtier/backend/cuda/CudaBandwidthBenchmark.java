package io.kvtier.backend.cuda;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferHandle;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * Measures page-batch copies of the {@code cuda} transfer engine against one contiguous copy of
 * the same bytes in the same run, on the GPU of {@code cuda.device} 0:
 *
 * <pre>{@code
 * java -Djava.library.path=backend-cuda/target/natives --module-path ... \
 *   -m io.kvtier.backend.cuda/io.kvtier.backend.cuda.CudaBandwidthBenchmark \
 *   [pages=64] [iterations=7]
 * }</pre>
 *
 * <p>The layout is a realistic one (32 layers, 8 KV heads, head dim 128, 2-byte elements) at page
 * sizes 16 and 64; a batch copies {@code pages} random pages, all layers, from a pool four times
 * larger, in both directions, with both pools layer-first (kvtier's default) and both page-first,
 * with strided copies on (the default) and off. Each figure is the median of {@code iterations}
 * timed submit-and-await rounds after one warm-up; the round trip is then verified byte for byte.
 * The exit status is 0 when the default mode reaches {@value #MIN_RATIO} of the contiguous copy's
 * bandwidth at page size 64 with layer-first pools in both directions, 3 when it does not, 2 when
 * no GPU is usable.
 */
public final class CudaBandwidthBenchmark {

  /** The share of the contiguous copy's bandwidth that page batches must reach. */
  public static final double MIN_RATIO = 0.80;

  private static final int LAYERS = 32;
  private static final int KV_HEADS = 8;
  private static final int HEAD_DIM = 128;
  private static final int DTYPE_BYTES = 2;
  private static final List<TransferDirection> LOAD_THEN_BACKUP =
      List.of(TransferDirection.HOST_TO_DEVICE, TransferDirection.DEVICE_TO_HOST);

  private record Row(
      int pageSize,
      MemoryLayout layout,
      boolean strided,
      TransferDirection direction,
      double gbps,
      double contiguousGbps) {
    double ratio() {
      return gbps / contiguousGbps;
    }
  }

  private CudaBandwidthBenchmark() {}

  /**
   * Runs the benchmark.
   *
   * @param args {@code pages=N} (pages per batch, default 64) and {@code iterations=N} (default 7)
   */
  public static void main(String[] args) {
    int pages = intArg(args, "pages", 64);
    int iterations = intArg(args, "iterations", 7);
    System.exit(run(pages, iterations, System.out));
  }

  static int run(int pages, int iterations, PrintStream out) {
    Availability availability = new CudaDeviceMemoryProvider().availability();
    if (!availability.available()) {
      out.println("cuda unavailable: " + availability.reason());
      return 2;
    }
    out.println("cuda: " + availability.reason());
    out.printf(
        Locale.ROOT,
        "%-5s %-11s %-9s %-14s %9s %9s %6s%n",
        "PAGE",
        "LAYOUT",
        "COPIES",
        "DIRECTION",
        "GB/s",
        "CONTIG",
        "RATIO");
    List<Row> rows = new ArrayList<>();
    for (int pageSize : new int[] {16, 64}) {
      for (MemoryLayout layout : MemoryLayout.values()) {
        rows.addAll(measure(pageSize, layout, pages, iterations, out));
      }
    }
    boolean pass = true;
    StringBuilder acceptance = new StringBuilder();
    for (Row r : rows) {
      if (r.pageSize() == 64 && r.layout() == MemoryLayout.LAYER_FIRST && r.strided()) {
        pass &= r.ratio() >= MIN_RATIO;
        acceptance.append(String.format(Locale.ROOT, " %s %.2f", r.direction(), r.ratio()));
      }
    }
    out.println(
        "acceptance (page size 64, layer-first, default copies) vs contiguous:"
            + acceptance
            + " (need "
            + MIN_RATIO
            + "): "
            + (pass ? "PASS" : "FAIL"));
    return pass ? 0 : 3;
  }

  private static List<Row> measure(
      int pageSize, MemoryLayout layout, int pages, int iterations, PrintStream out) {
    KvLayout kv = new KvLayout(LAYERS, KV_HEADS, HEAD_DIM, DTYPE_BYTES, pageSize);
    PoolSpec spec = new PoolSpec(kv, 4 * pages, layout);
    BackendContext context = BackendContext.defaults();
    List<Row> rows = new ArrayList<>();
    try (CudaDeviceMemory device =
            (CudaDeviceMemory) new CudaDeviceMemoryProvider().open(spec, context);
        CudaHostMemory host = (CudaHostMemory) new CudaHostMemoryProvider().open(spec, context)) {
      Random random = new Random(pageSize * 31L + layout.ordinal());
      int[] devicePages = Arrays.copyOf(permutation(spec.pages(), random), pages);
      int[] hostPages = permutation(spec.pages(), random);
      int[] source = Arrays.copyOfRange(hostPages, 0, pages);
      int[] target = Arrays.copyOfRange(hostPages, pages, 2 * pages);
      fillPattern(host, source);
      long bytes = kv.pageBytes() * pages;
      double[] contiguous = new double[2];
      for (TransferDirection d : TransferDirection.values()) {
        contiguous[d.ordinal()] = contiguousGbps(device, host, d, bytes, iterations);
      }
      // Strided copies change nothing when every page is contiguous on both sides.
      boolean[] modes =
          layout == MemoryLayout.LAYER_FIRST ? new boolean[] {true, false} : new boolean[] {true};
      for (boolean strided : modes) {
        CudaConfig config = new CudaConfig(0, strided);
        try (CudaTransferEngine engine = new CudaTransferEngine(device, host, config, context)) {
          // Loads first, so that the backups copy back what the loads brought in.
          for (TransferDirection d : LOAD_THEN_BACKUP) {
            int[] hostSide = d == TransferDirection.HOST_TO_DEVICE ? source : target;
            TransferBatch batch = TransferBatch.allLayers(d, devicePages, hostSide);
            double gbps =
                bytes
                    / 1e9
                    / medianSeconds(
                        iterations,
                        () -> {
                          TransferHandle h = engine.submit(batch);
                          h.await();
                        });
            Row row = new Row(pageSize, layout, strided, d, gbps, contiguous[d.ordinal()]);
            rows.add(row);
            out.printf(
                Locale.ROOT,
                "%-5d %-11s %-9s %-14s %9.2f %9.2f %6.2f%n",
                pageSize,
                layout,
                strided ? "strided" : "contig",
                d,
                gbps,
                row.contiguousGbps(),
                row.ratio());
          }
        }
        verifyRoundTrip(host, source, target, kv);
      }
    }
    return rows;
  }

  private static double contiguousGbps(
      CudaDeviceMemory device,
      CudaHostMemory host,
      TransferDirection direction,
      long bytes,
      int iterations) {
    device.context().makeCurrent();
    CUstream stream = new CUstream();
    CudaDriver.check(
        "cuStreamCreate",
        () -> JCudaDriver.cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING));
    try {
      CudaHostPointer hostPointer = CudaHostPointer.at(host.address());
      return bytes
          / 1e9
          / medianSeconds(
              iterations,
              () -> {
                if (direction == TransferDirection.HOST_TO_DEVICE) {
                  CudaDriver.check(
                      "cuMemcpyHtoDAsync",
                      () ->
                          JCudaDriver.cuMemcpyHtoDAsync(device.base(), hostPointer, bytes, stream));
                } else {
                  CudaDriver.check(
                      "cuMemcpyDtoHAsync",
                      () ->
                          JCudaDriver.cuMemcpyDtoHAsync(hostPointer, device.base(), bytes, stream));
                }
                CudaDriver.check(
                    "cuStreamSynchronize", () -> JCudaDriver.cuStreamSynchronize(stream));
              });
    } finally {
      CudaDriver.check("cuStreamDestroy", () -> JCudaDriver.cuStreamDestroy(stream));
    }
  }

  /** A timed action. */
  private interface Round {
    void run() throws InterruptedException;
  }

  private static double medianSeconds(int iterations, Round round) {
    double[] seconds = new double[iterations];
    try {
      round.run();
      for (int i = 0; i < iterations; i++) {
        long start = System.nanoTime();
        round.run();
        seconds[i] = (System.nanoTime() - start) / 1e9;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
    Arrays.sort(seconds);
    return seconds[iterations / 2];
  }

  /** Each block a different byte, and its page and layer in its first 8 bytes. */
  private static void fillPattern(CudaHostMemory host, int[] pages) {
    for (int page : pages) {
      for (int layer = 0; layer < LAYERS; layer++) {
        MemorySegment block = host.block(page, layer);
        block.fill((byte) (page * 31 + layer * 7 + 1));
        block.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, ((long) page << 32) | layer);
      }
    }
  }

  private static void verifyRoundTrip(
      CudaHostMemory host, int[] source, int[] target, KvLayout kv) {
    for (int i = 0; i < source.length; i++) {
      for (int layer = 0; layer < kv.layers(); layer++) {
        long at = host.block(source[i], layer).mismatch(host.block(target[i], layer));
        if (at != -1) {
          throw new IllegalStateException(
              "round trip corrupted host page "
                  + source[i]
                  + " layer "
                  + layer
                  + " (copied back to host page "
                  + target[i]
                  + ") at byte "
                  + at);
        }
      }
    }
  }

  private static int[] permutation(int n, Random random) {
    int[] p = new int[n];
    for (int i = 0; i < n; i++) {
      p[i] = i;
    }
    for (int i = n - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    return p;
  }

  private static int intArg(String[] args, String name, int fallback) {
    for (String arg : args) {
      if (arg.startsWith(name + "=")) {
        try {
          int value = Integer.parseInt(arg.substring(name.length() + 1));
          if (value >= 1) {
            return value;
          }
        } catch (NumberFormatException e) {
          // reported below
        }
        throw new IllegalArgumentException(arg + ": " + name + " must be an integer >= 1");
      }
    }
    return fallback;
  }
}
