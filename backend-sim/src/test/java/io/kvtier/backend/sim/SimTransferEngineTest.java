package io.kvtier.backend.sim;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageMemory;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

@ExtendWith(SeedExtension.class)
@Timeout(30)
class SimTransferEngineTest {

  /** 4 layers of 32-byte blocks: 128-byte pages. */
  static final KvLayout LAYOUT = new KvLayout(4, 1, 4, 2, 2);

  /** 1 byte per nanosecond plus 1 us per batch in both directions. */
  static final Map<String, String> SIMPLE_TIMING =
      Map.of(
          SimConfig.H2D_BANDWIDTH, "1GB/s",
          SimConfig.D2H_BANDWIDTH, "1GB/s",
          SimConfig.H2D_LATENCY, "1us",
          SimConfig.D2H_LATENCY, "1us");

  private final ManualTimeSource clock = new ManualTimeSource(1_000_000);
  private final RecordingMetrics metrics = new RecordingMetrics();
  private SimDeviceMemory device;
  private HostMemory host;
  private SimTransferEngine engine;

  @AfterEach
  void closeAll() {
    if (engine != null) {
      engine.close();
    }
    if (device != null) {
      device.close();
    }
    if (host != null) {
      host.close();
    }
  }

  private void open(Map<String, String> properties, int rank, TimeSource time) {
    open(properties, rank, time, MemoryLayout.LAYER_FIRST, MemoryLayout.PAGE_FIRST, 8, 8);
  }

  private void open(
      Map<String, String> properties,
      int rank,
      TimeSource time,
      MemoryLayout deviceLayout,
      MemoryLayout hostLayout,
      int devicePages,
      int hostPages) {
    BackendContext context = new BackendContext(rank, properties, time, metrics);
    device =
        new SimDeviceMemoryProvider()
            .open(new PoolSpec(LAYOUT, devicePages, deviceLayout), context);
    host = new SimHostMemoryProvider().open(new PoolSpec(LAYOUT, hostPages, hostLayout), context);
    engine = device.transferEngine(host);
  }

  static byte pattern(int tag, int layer, long i) {
    return (byte) (tag * 37 + layer * 11 + i + 1);
  }

  /** Writes the pattern of {@code tag} into every layer of a page. */
  static void fill(PageMemory pool, int page, int tag) {
    long blockBytes = LAYOUT.pageBytesPerLayer();
    MemorySegment buf = MemorySegment.ofArray(new byte[(int) blockBytes]);
    for (int layer = 0; layer < LAYOUT.layers(); layer++) {
      for (long i = 0; i < blockBytes; i++) {
        buf.set(ValueLayout.JAVA_BYTE, i, pattern(tag, layer, i));
      }
      pool.write(page, layer, 0, buf);
    }
  }

  /** Whether one layer of a page holds the pattern of {@code tag} (-1: all zero). */
  static boolean holds(PageMemory pool, int page, int layer, int tag) {
    long blockBytes = LAYOUT.pageBytesPerLayer();
    MemorySegment buf = MemorySegment.ofArray(new byte[(int) blockBytes]);
    pool.read(page, layer, 0, buf);
    for (long i = 0; i < blockBytes; i++) {
      byte expected = tag < 0 ? 0 : pattern(tag, layer, i);
      if (buf.get(ValueLayout.JAVA_BYTE, i) != expected) {
        return false;
      }
    }
    return true;
  }

  static boolean holdsAllLayers(PageMemory pool, int page, int tag) {
    for (int layer = 0; layer < LAYOUT.layers(); layer++) {
      if (!holds(pool, page, layer, tag)) {
        return false;
      }
    }
    return true;
  }

  static Stream<Arguments> layoutPairs() {
    return Stream.of(MemoryLayout.values())
        .flatMap(d -> Stream.of(MemoryLayout.values()).map(h -> Arguments.of(d, h)));
  }

  @ParameterizedTest
  @MethodSource("layoutPairs")
  void bytesMakeTheRoundTripDeviceToHostToDevice(MemoryLayout deviceLayout, MemoryLayout hostLayout)
      throws Exception {
    open(SIMPLE_TIMING, 0, clock, deviceLayout, hostLayout, 6, 5);
    fill(device, 0, 10);
    fill(device, 2, 12);
    TransferHandle backup =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0, 2}, new int[] {3, 1}));
    clock.advance(Duration.ofMillis(1));
    backup.await();
    assertThat(holdsAllLayers(host, 3, 10)).isTrue();
    assertThat(holdsAllLayers(host, 1, 12)).isTrue();
    assertThat(holdsAllLayers(host, 0, -1)).as("untouched host page").isTrue();

    fill(device, 0, 20); // the device pages get reused for something else
    fill(device, 2, 22);
    TransferHandle load =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {4, 5}, new int[] {3, 1}));
    clock.advance(Duration.ofMillis(1));
    load.await();
    assertThat(holdsAllLayers(device, 4, 10)).isTrue();
    assertThat(holdsAllLayers(device, 5, 12)).isTrue();
    assertThat(holdsAllLayers(device, 0, 20)).isTrue();
    assertThat(engine.inFlight()).isZero();
  }

  @ParameterizedTest
  @MethodSource("layoutPairs")
  void aSingleLayerBatchCopiesOnlyThatLayer(MemoryLayout deviceLayout, MemoryLayout hostLayout)
      throws Exception {
    open(SIMPLE_TIMING, 0, clock, deviceLayout, hostLayout, 4, 4);
    fill(host, 2, 7);
    for (int layer = 0; layer < LAYOUT.layers(); layer++) {
      engine.submit(TransferBatch.oneLayer(HOST_TO_DEVICE, new int[] {1}, new int[] {2}, layer));
      clock.advance(Duration.ofMillis(1));
      assertThat(engine.inFlight()).isZero();
      for (int l = 0; l < LAYOUT.layers(); l++) {
        assertThat(holds(device, 1, l, l <= layer ? 7 : -1))
            .as("layer %d after %d", l, layer)
            .isTrue();
      }
    }
    fill(device, 3, 8);
    TransferHandle h =
        engine.submit(TransferBatch.oneLayer(DEVICE_TO_HOST, new int[] {3}, new int[] {0}, 2));
    clock.advance(Duration.ofMillis(1));
    h.await();
    for (int l = 0; l < LAYOUT.layers(); l++) {
      assertThat(holds(host, 0, l, l == 2 ? 8 : -1)).as("host layer %d", l).isTrue();
    }
  }

  @Test
  void acceptsAHostPoolOfAnotherProvider() throws Exception {
    BackendContext context = new BackendContext(0, SIMPLE_TIMING, clock, metrics);
    device =
        new SimDeviceMemoryProvider()
            .open(new PoolSpec(LAYOUT, 2, MemoryLayout.LAYER_FIRST), context);
    host = new HeapHostMemory(new PoolSpec(LAYOUT, 2, MemoryLayout.PAGE_FIRST));
    engine = device.transferEngine(host);
    fill(device, 1, 3);
    TransferHandle h =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {1}, new int[] {0}));
    clock.advance(Duration.ofMillis(1));
    h.await();
    assertThat(holdsAllLayers(host, 0, 3)).isTrue();
    TransferHandle back =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {0}));
    clock.advance(Duration.ofMillis(1));
    back.await();
    assertThat(holdsAllLayers(device, 0, 3)).isTrue();
  }

  @Test
  void aQueryBeforeTheModelledTimeSaysNotDoneAndTheDestinationIsUntouched() throws Exception {
    open(SIMPLE_TIMING, 0, clock);
    fill(device, 0, 1);
    TransferHandle h =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {0}));
    long due = 1_000 + LAYOUT.pageBytes(); // latency + 128 bytes at 1 byte/ns
    assertThat(h.isDone()).isFalse();
    assertThat(h.failure()).isEmpty();
    assertThat(engine.inFlight()).isEqualTo(1);
    clock.advance(Duration.ofNanos(due - 1));
    assertThat(h.isDone()).isFalse();
    assertThat(holdsAllLayers(host, 0, -1)).as("destination before done").isTrue();
    clock.advance(Duration.ofNanos(1));
    assertThat(h.isDone()).isTrue();
    assertThat(h.failure()).isEmpty();
    assertThat(h.sequence()).isZero();
    assertThat(h.batch().devicePages()).containsExactly(0);
    assertThat(holdsAllLayers(host, 0, 1)).isTrue();
    assertThat(engine.inFlight()).isZero();
    assertThat(metrics.counter("transfer.bytes.d2h")).isEqualTo(LAYOUT.pageBytes());
    assertThat(metrics.durationCount("transfer.latency.d2h")).isEqualTo(1);
  }

  @Test
  void theSourceIsReadWhenTheCopyCompletesNotWhenItIsSubmitted() {
    open(SIMPLE_TIMING, 0, clock);
    fill(device, 0, 1);
    TransferHandle h =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {0}));
    fill(device, 0, 2); // reusing a source page while its copy runs is a caller bug ...
    clock.advance(Duration.ofMillis(1));
    assertThat(h.isDone()).isTrue();
    // ... which the destination shows, so that a checker sees the corruption.
    assertThat(holdsAllLayers(host, 0, 2)).isTrue();
  }

  @Test
  void completionIsFifoPerDirectionAndFollowsTheModelExactly() {
    var random = TestSeeds.random("completionIsFifoPerDirection");
    long seed = random.nextLong();
    Map<String, String> properties =
        Map.of(
            SimConfig.H2D_BANDWIDTH, "1GB/s",
            SimConfig.D2H_BANDWIDTH, "3GB/s",
            SimConfig.H2D_LATENCY, "2us",
            SimConfig.D2H_LATENCY, "1us",
            SimConfig.RANK_SKEW, "1,3",
            SimConfig.JITTER, "0.8",
            SimConfig.SEED, Long.toString(seed));
    open(properties, 1, clock);
    SimTimingModel model = engine.timingModel();
    int n = 200 * TestSeeds.multiplier();
    TransferHandle[] handles = new TransferHandle[n];
    long[] effective = new long[n];
    long[] lastModelled = {Long.MIN_VALUE, Long.MIN_VALUE};
    long[] lastEffective = {Long.MIN_VALUE, Long.MIN_VALUE};
    long[] nextSequence = new long[2];
    int submitted = 0;
    for (int step = 0; step < 4 * n; step++) {
      if (submitted < n && random.nextInt(3) > 0) {
        var direction = random.nextBoolean() ? DEVICE_TO_HOST : HOST_TO_DEVICE;
        int pages = 1 + random.nextInt(3);
        int[] dp = random.ints(pages, 0, 8).toArray();
        int[] hp = random.ints(pages, 0, 8).toArray();
        boolean oneLayer = random.nextBoolean();
        TransferBatch batch =
            oneLayer
                ? TransferBatch.oneLayer(direction, dp, hp, random.nextInt(LAYOUT.layers()))
                : TransferBatch.allLayers(direction, dp, hp);
        handles[submitted] = engine.submit(batch);
        int d = direction.ordinal();
        long bytes = pages * (oneLayer ? LAYOUT.pageBytesPerLayer() : LAYOUT.pageBytes());
        long seq = nextSequence[d]++;
        assertThat(handles[submitted].sequence()).isEqualTo(seq);
        long modelled =
            model.completionNanos(direction, seq, bytes, clock.nanoTime(), lastModelled[d]);
        lastModelled[d] = modelled;
        effective[submitted] = Math.max(modelled, lastEffective[d]);
        lastEffective[d] = effective[submitted];
        submitted++;
      } else {
        clock.advance(Duration.ofNanos(random.nextInt(20_000)));
      }
      long now = clock.nanoTime();
      int expectedInFlight = 0;
      // Query in random order: the answer must not depend on who asks first.
      int start = submitted == 0 ? 0 : random.nextInt(submitted);
      for (int k = 0; k < submitted; k++) {
        int i = (start + k) % submitted;
        boolean shouldBeDone = now >= effective[i];
        assertThat(handles[i].isDone())
            .as(
                "batch %d (%s) at now=%d, due=%d, seed=%d",
                i, handles[i].batch(), now, effective[i], seed)
            .isEqualTo(shouldBeDone);
      }
      for (int i = 0; i < submitted; i++) {
        expectedInFlight += now >= effective[i] ? 0 : 1;
      }
      assertThat(engine.inFlight()).isEqualTo(expectedInFlight);
    }
  }

  @Test
  void sameSeedSameCompletionTimes() {
    Map<String, String> properties =
        Map.of(SimConfig.JITTER, "1", SimConfig.SEED, "77", SimConfig.FAILURE_PROBABILITY, "0.2");
    long[] first = completionTimes(properties);
    closeAll();
    long[] second = completionTimes(properties);
    assertThat(second).containsExactly(first);
  }

  /** Submits 20 batches at once and advances 100 ns at a time, noting when each is done. */
  private long[] completionTimes(Map<String, String> properties) {
    ManualTimeSource time = new ManualTimeSource();
    open(properties, 2, time);
    TransferHandle[] handles = new TransferHandle[20];
    for (int i = 0; i < handles.length; i++) {
      handles[i] =
          engine.submit(
              TransferBatch.allLayers(
                  i % 2 == 0 ? DEVICE_TO_HOST : HOST_TO_DEVICE,
                  new int[] {i % 8},
                  new int[] {(i + 1) % 8}));
    }
    long[] done = new long[handles.length * 2];
    while (engine.inFlight() > 0) {
      time.advance(Duration.ofNanos(100));
      for (int i = 0; i < handles.length; i++) {
        if (done[2 * i] == 0 && handles[i].isDone()) {
          done[2 * i] = time.nanoTime();
          done[2 * i + 1] = handles[i].failure().isPresent() ? 1 : 0;
        }
      }
    }
    return done;
  }

  @Test
  void awaitBlocksUntilAnotherThreadAdvancesTheVirtualClock() throws Exception {
    open(SIMPLE_TIMING, 0, clock);
    TransferHandle h =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {0}));
    Thread waiter =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    h.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
    awaitParked(waiter);
    assertThat(h.isDone()).isFalse();
    clock.advance(Duration.ofMillis(1));
    waiter.join();
    assertThat(h.isDone()).isTrue();
  }

  @Test
  void boundedAwaitCountsInTheTimeSource() throws Exception {
    open(SIMPLE_TIMING, 0, clock);
    engine.faults().stallNext(HOST_TO_DEVICE, 1);
    TransferHandle stalled =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {0}));
    boolean[] result = {true};
    Thread waiter =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    result[0] = stalled.await(Duration.ofMillis(5));
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
    awaitParked(waiter);
    clock.advance(Duration.ofMillis(4));
    awaitParked(waiter); // still waiting: 4 of 5 virtual ms have passed
    clock.advance(Duration.ofMillis(1));
    waiter.join();
    assertThat(result[0]).isFalse();
    assertThat(stalled.isDone()).isFalse();

    TransferHandle d2h =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {0}));
    clock.advance(Duration.ofMillis(1));
    assertThat(d2h.await(Duration.ZERO)).isTrue();
  }

  @Test
  void anInjectedFailureCompletesOnTimeFailsAndLeavesTheDestination() throws Exception {
    open(SIMPLE_TIMING, 0, clock);
    fill(device, 0, 1);
    engine.faults().failNext(DEVICE_TO_HOST, 1);
    assertThat(engine.faults().pending()).isEqualTo(1);
    TransferHandle h2d =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {1}, new int[] {1}));
    TransferHandle failing =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {0}));
    TransferHandle next =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {1}));
    assertThat(engine.faults().pending()).isZero();
    assertThat(failing.isDone()).isFalse();
    assertThat(failing.failure()).isEmpty();
    clock.advance(Duration.ofMillis(1));
    assertThat(failing.isDone()).isTrue();
    assertThat(failing.failure()).get().isInstanceOf(TransferFailedException.class);
    assertThatThrownBy(failing::await)
        .isInstanceOf(TransferFailedException.class)
        .hasMessageContaining("DEVICE_TO_HOST")
        .hasMessageContaining("seq=0")
        .hasMessageContaining("injected");
    assertThatThrownBy(() -> failing.await(Duration.ofSeconds(1)))
        .isInstanceOf(TransferFailedException.class);
    assertThat(holdsAllLayers(host, 0, -1)).as("failed destination").isTrue();
    next.await();
    assertThat(holdsAllLayers(host, 1, 1)).as("the next batch copies").isTrue();
    assertThat(h2d.failure()).as("the other direction").isEmpty();
    assertThat(metrics.counter("transfer.failures.d2h")).isEqualTo(1);
  }

  @Test
  void predicateRulesTakeOnlyMatchingBatches() throws Exception {
    open(SIMPLE_TIMING, 0, clock);
    engine.faults().failMatching(b -> b.layer().equals(OptionalInt.of(2)), 2);
    TransferHandle[] handles = new TransferHandle[LAYOUT.layers() * 3];
    for (int i = 0; i < handles.length; i++) {
      handles[i] =
          engine.submit(
              TransferBatch.oneLayer(
                  HOST_TO_DEVICE, new int[] {0}, new int[] {0}, i % LAYOUT.layers()));
    }
    clock.advance(Duration.ofMillis(1));
    for (int i = 0; i < handles.length; i++) {
      boolean shouldFail = i % LAYOUT.layers() == 2 && i < 2 * LAYOUT.layers();
      assertThat(handles[i].isDone()).isTrue();
      assertThat(handles[i].failure().isPresent()).as("batch %d", i).isEqualTo(shouldFail);
    }
  }

  @Test
  void aStallHoldsItsBatchAndEveryLaterOneOfItsDirectionUntilReleased() throws Exception {
    open(SIMPLE_TIMING, 0, clock);
    fill(host, 0, 5);
    engine.faults().stallNext(HOST_TO_DEVICE, 1);
    TransferHandle stalled =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {0}));
    TransferHandle behind =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {1}, new int[] {0}));
    TransferHandle other =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {2}, new int[] {1}));
    clock.advance(Duration.ofSeconds(1));
    assertThat(stalled.isDone()).isFalse();
    assertThat(behind.isDone()).isFalse();
    assertThat(other.isDone()).as("the other direction is independent").isTrue();
    assertThat(engine.faults().stalled()).isEqualTo(1);
    assertThat(engine.inFlight()).isEqualTo(2);
    assertThat(holdsAllLayers(device, 0, -1)).isTrue();

    assertThat(engine.faults().release(DEVICE_TO_HOST)).isZero();
    assertThat(engine.faults().release()).isEqualTo(1);
    assertThat(stalled.isDone()).isTrue();
    assertThat(behind.isDone()).isTrue();
    assertThat(stalled.failure()).isEmpty();
    assertThat(holdsAllLayers(device, 0, 5)).isTrue();
    assertThat(holdsAllLayers(device, 1, 5)).isTrue();
    assertThat(engine.faults().stalled()).isZero();
  }

  @Test
  void releaseWakesAWaiter() throws Exception {
    open(SIMPLE_TIMING, 0, clock);
    engine.faults().stallNext(1);
    TransferHandle h =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {0}));
    clock.advance(Duration.ofMillis(1));
    Thread waiter =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    h.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
    awaitParked(waiter);
    engine.faults().release();
    waiter.join();
    assertThat(h.isDone()).isTrue();
  }

  @Test
  void randomFailuresAreSeeded() {
    Map<String, String> properties =
        Map.of(SimConfig.FAILURE_PROBABILITY, "0.5", SimConfig.SEED, "12345");
    open(properties, 3, clock);
    SimTimingModel model = engine.timingModel();
    int failures = 0;
    for (int seq = 0; seq < 40; seq++) {
      TransferHandle h =
          engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {0}));
      clock.advance(Duration.ofMillis(1));
      assertThat(h.isDone()).isTrue();
      boolean expected = model.randomFailure(HOST_TO_DEVICE, seq);
      assertThat(h.failure().isPresent()).as("seq %d", seq).isEqualTo(expected);
      assertThat(h.failure().map(Throwable::getMessage).orElse(""))
          .contains(expected ? "sim.failure-probability=0.5" : "");
      failures += expected ? 1 : 0;
    }
    assertThat(failures).isBetween(1, 39);
  }

  @Test
  void closeOnAVirtualClockFailsWhatIsNotDueAndNeverHangs() throws Exception {
    open(SIMPLE_TIMING, 0, clock);
    TransferHandle due =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {0}));
    clock.advance(Duration.ofMillis(1));
    TransferHandle notDue =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {1}));
    engine.faults().stallNext(1);
    TransferHandle stalled =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {0}));
    Thread waiter =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    stalled.await();
                  } catch (TransferFailedException expected) {
                    // the close fails the batch: the waiter must wake up
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
    awaitParked(waiter);
    engine.close();
    waiter.join();
    assertThat(due.failure()).isEmpty();
    assertThat(notDue.failure())
        .get()
        .extracting(Throwable::getMessage)
        .asString()
        .contains("closed");
    assertThat(stalled.failure())
        .get()
        .extracting(Throwable::getMessage)
        .asString()
        .contains("stalled");
    assertThat(engine.inFlight()).isZero();
    engine.close(); // idempotent
    assertThatThrownBy(
            () ->
                engine.submit(
                    TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {0})))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  void onTheWallClockAwaitAndCloseWaitForTheCopy() throws Exception {
    // 1 MB/s makes a 128-byte page take 128 us of real time.
    open(
        Map.of(SimConfig.H2D_BANDWIDTH, "1MB/s", SimConfig.D2H_BANDWIDTH, "1MB/s"),
        0,
        TimeSource.SYSTEM);
    fill(device, 0, 4);
    TransferHandle h =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {0}));
    h.await();
    assertThat(holdsAllLayers(host, 0, 4)).isTrue();
    TransferHandle pending =
        engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {1}));
    engine.faults().stallNext(1);
    TransferHandle stalled =
        engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {1}, new int[] {0}));
    engine.close();
    assertThat(pending.isDone()).isTrue();
    assertThat(pending.failure()).isEmpty();
    assertThat(holdsAllLayers(host, 1, 4)).isTrue();
    assertThat(stalled.failure()).isPresent();
  }

  @Test
  void submitChecksPagesAndLayerAgainstBothPools() {
    open(SIMPLE_TIMING, 0, clock, MemoryLayout.LAYER_FIRST, MemoryLayout.LAYER_FIRST, 8, 4);
    assertThatThrownBy(
            () ->
                engine.submit(
                    TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0, 8}, new int[] {0, 0})))
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining("device page=8 pages=8");
    assertThatThrownBy(
            () ->
                engine.submit(
                    TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {4})))
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining("host page=4 pages=4");
    assertThatThrownBy(
            () ->
                engine.submit(
                    TransferBatch.oneLayer(HOST_TO_DEVICE, new int[] {0}, new int[] {0}, 4)))
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining("layer=4 layers=4");
    assertThat(engine.inFlight()).isZero();
  }

  @Test
  void theLayoutsOfBothPoolsMustMatch() {
    BackendContext context = new BackendContext(0, Map.of(), clock, BackendMetrics.NOOP);
    device =
        new SimDeviceMemoryProvider()
            .open(new PoolSpec(LAYOUT, 2, MemoryLayout.LAYER_FIRST), context);
    KvLayout other = new KvLayout(2, 1, 4, 2, 2);
    host =
        new SimHostMemoryProvider().open(new PoolSpec(other, 2, MemoryLayout.LAYER_FIRST), context);
    assertThatThrownBy(() -> device.transferEngine(host))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("layout");
  }

  @Test
  void faultCountsMustBePositive() {
    open(SIMPLE_TIMING, 0, clock);
    assertThatThrownBy(() -> engine.faults().failNext(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("count=0");
    engine.faults().stallNext(DEVICE_TO_HOST, 3).failNext(2);
    assertThat(engine.faults().pending()).isEqualTo(5);
    engine.faults().clear();
    assertThat(engine.faults().pending()).isZero();
  }

  /** Waits (bounded by the class timeout) until a thread blocks, without sleeping a fixed time. */
  static void awaitParked(Thread t) throws InterruptedException {
    while (t.isAlive()
        && t.getState() != Thread.State.WAITING
        && t.getState() != Thread.State.TIMED_WAITING) {
      Thread.sleep(1);
    }
    assertThat(t.isAlive()).as("the thread blocks instead of returning").isTrue();
  }
}
