package io.kvtier.testkit.conformance;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The transfer engine's checks of {@link DeviceMemoryConformanceSuite}: copies, FIFO completion,
 * queries before completion, failures, bounds and close. Subclass {@link
 * DeviceMemoryConformanceSuite}, not this class.
 */
public abstract class DeviceTransferChecks extends DeviceSuiteBase {

  /** For subclasses. */
  protected DeviceTransferChecks() {}

  /**
   * Bytes copied device to host and back are identical, for every pair of memory layouts.
   *
   * @param deviceLayout the device pool's layout
   * @param hostLayout the host pool's layout
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @ParameterizedTest(name = "device {0}, host {1}")
  @CsvSource({
    "LAYER_FIRST, LAYER_FIRST",
    "LAYER_FIRST, PAGE_FIRST",
    "PAGE_FIRST, LAYER_FIRST",
    "PAGE_FIRST, PAGE_FIRST"
  })
  public void copiesAllLayersToHostAndBack(
      MemoryLayout deviceLayout, MemoryLayout hostLayout, Random random) throws Exception {
    try (TransferFixture f = open(deviceLayout, hostLayout)) {
      int layers = layout().layers();
      int n = devicePages();
      byte[][][] original = new byte[n][layers][];
      for (int p = 0; p < n; p++) {
        for (int l = 0; l < layers; l++) {
          original[p][l] = Blocks.fillRandom(f.device, p, l, random);
        }
      }
      int[] from = Batches.permutation(n, random);
      int[] hostPages = Arrays.copyOf(Batches.permutation(hostPages(), random), n);
      TransferBatch out = TransferBatch.allLayers(DEVICE_TO_HOST, from, hostPages);
      TransferHandle h = f.engine.submit(out);
      f.finish(h);
      assertThat(h.batch()).isEqualTo(out);
      assertThat(h.failure()).isEmpty();
      for (int i = 0; i < n; i++) {
        for (int l = 0; l < layers; l++) {
          assertThat(Blocks.read(f.host, hostPages[i], l))
              .as("host page %d layer %d after D2H from device page %d", hostPages[i], l, from[i])
              .isEqualTo(original[from[i]][l]);
        }
      }
      for (int p = 0; p < n; p++) {
        for (int l = 0; l < layers; l++) {
          Blocks.fillRandom(f.device, p, l, random);
        }
      }
      int[] to = Batches.permutation(n, random);
      TransferHandle back = f.engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, to, hostPages));
      f.finish(back);
      for (int i = 0; i < n; i++) {
        for (int l = 0; l < layers; l++) {
          assertThat(Blocks.read(f.device, to[i], l))
              .as("device page %d layer %d after D2H from %d and H2D back", to[i], l, from[i])
              .isEqualTo(original[from[i]][l]);
        }
      }
      assertThat(f.engine.inFlight()).isZero();
    }
  }

  /**
   * A one-layer batch copies that layer only, in both directions.
   *
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @Test
  public void copiesOneLayerAtATime(Random random) throws Exception {
    try (TransferFixture f = open()) {
      int layers = layout().layers();
      int[] device = {0, 3, 5};
      int[] host = {7, 1, 4};
      byte[] zeros = new byte[Math.toIntExact(Blocks.blockBytes(f.device))];
      byte[][][] original = new byte[device.length][layers][];
      for (int i = 0; i < device.length; i++) {
        for (int l = 0; l < layers; l++) {
          original[i][l] = Blocks.fillRandom(f.device, device[i], l, random);
        }
      }
      for (int layer = 0; layer < layers; layer++) {
        f.finish(f.engine.submit(TransferBatch.oneLayer(DEVICE_TO_HOST, device, host, layer)));
        for (int i = 0; i < device.length; i++) {
          for (int l = 0; l < layers; l++) {
            assertThat(Blocks.read(f.host, host[i], l))
                .as("host page %d layer %d after D2H of layers 0..%d", host[i], l, layer)
                .isEqualTo(l <= layer ? original[i][l] : zeros);
          }
        }
      }
      for (int i = 0; i < device.length; i++) {
        for (int l = 0; l < layers; l++) {
          Blocks.write(f.device, device[i], l, zeros);
        }
      }
      for (int layer = 0; layer < layers; layer++) {
        f.finish(f.engine.submit(TransferBatch.oneLayer(HOST_TO_DEVICE, device, host, layer)));
        for (int i = 0; i < device.length; i++) {
          for (int l = 0; l < layers; l++) {
            assertThat(Blocks.read(f.device, device[i], l))
                .as("device page %d layer %d after H2D of layers 0..%d", device[i], l, layer)
                .isEqualTo(l <= layer ? original[i][l] : zeros);
          }
        }
      }
    }
  }

  /**
   * Many batches of mixed sizes and layers in both directions: per direction, sequences count
   * from 0 in submission order, a done handle implies every earlier one is done (checked while
   * submitting and while completing), and the last copy into a block wins.
   *
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @Test
  public void completesInSubmissionOrderPerDirection(Random random) throws Exception {
    try (TransferFixture f = open()) {
      new FifoScenario(f, layout().layers(), devicePages(), hostPages(), random)
          .run(TestSeeds.scaled(60));
    }
  }

  /**
   * Before a copy completes its handle says not done and it counts as in flight; the other
   * direction is not held up.
   *
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @Test
  public void queryBeforeCompletionSaysNotDone(Random random) throws Exception {
    requireAny(
        "a query before completion",
        TransferCapability.STALL_INJECTION,
        TransferCapability.VIRTUAL_TIME);
    try (TransferFixture f = open()) {
      byte[] data = Blocks.fillRandom(f.device, 2, 1, random);
      if (has(TransferCapability.STALL_INJECTION)) {
        f.control.stall(DEVICE_TO_HOST);
        TransferHandle a = f.engine.submit(Batches.single(DEVICE_TO_HOST, 2, 6));
        TransferHandle b = f.engine.submit(Batches.single(DEVICE_TO_HOST, 1, 5));
        assertThat(a.isDone()).as("stalled D2H seq 0 isDone()").isFalse();
        assertThat(b.isDone()).as("stalled D2H seq 1 isDone()").isFalse();
        assertThat(a.failure()).isEmpty();
        assertThat(f.engine.inFlight()).as("inFlight() with two stalled batches").isEqualTo(2);
        TransferHandle other = f.engine.submit(Batches.single(HOST_TO_DEVICE, 7, 9));
        f.finish(other);
        assertThat(a.isDone()).as("stalled D2H after an H2D completed").isFalse();
        f.control.release(DEVICE_TO_HOST);
        f.finish(a, b);
      } else {
        TransferHandle a = f.engine.submit(Batches.single(DEVICE_TO_HOST, 2, 6));
        assertThat(a.isDone()).as("isDone() before virtual time moved").isFalse();
        assertThat(f.engine.inFlight()).isEqualTo(1);
        f.finish(a);
      }
      assertThat(f.engine.inFlight()).isZero();
      assertThat(Blocks.read(f.host, 6, 1)).isEqualTo(data);
    }
  }

  /**
   * {@code await(timeout)} returns false while the copy is held back, and true once done.
   *
   * @throws Exception on failure
   */
  @Test
  public void awaitWithTimeoutReturnsFalseWhileNotDone() throws Exception {
    requireAny("await(timeout) on a held-back copy", TransferCapability.STALL_INJECTION);
    try (TransferFixture f = open()) {
      f.control.stall(HOST_TO_DEVICE);
      TransferHandle a = f.engine.submit(Batches.single(HOST_TO_DEVICE, 0, 0));
      boolean done = f.whileDriving(() -> a.await(Duration.ofMillis(5)));
      assertThat(done).as("await(5 ms) on a stalled copy").isFalse();
      assertThat(a.isDone()).isFalse();
      f.control.release(HOST_TO_DEVICE);
      f.drive(a);
      assertThat(a.await(Duration.ofMillis(5))).as("await(5 ms) on a done copy").isTrue();
      a.await();
    }
  }

  /**
   * A failed copy is done, reports its failure, and its await throws {@link
   * TransferFailedException}; the engine keeps working.
   *
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @Test
  public void failedCopySurfacesAsTransferFailedException(Random random) throws Exception {
    requireAny("a failing copy", TransferCapability.FAULT_INJECTION);
    try (TransferFixture f = open()) {
      byte[] data = Blocks.fillRandom(f.device, 4, 0, random);
      f.control.failNext(DEVICE_TO_HOST);
      TransferHandle failed = f.engine.submit(Batches.single(DEVICE_TO_HOST, 3, 3));
      TransferHandle next = f.engine.submit(Batches.single(DEVICE_TO_HOST, 4, 8));
      f.drive(failed);
      assertThat(failed.isDone()).isTrue();
      assertThat(failed.failure()).as("failure() of the failed batch").isPresent();
      assertThatThrownBy(failed::await).isInstanceOf(TransferFailedException.class);
      assertThatThrownBy(() -> failed.await(Duration.ofMillis(1)))
          .isInstanceOf(TransferFailedException.class);
      f.finish(next);
      assertThat(next.failure()).isEmpty();
      assertThat(Blocks.read(f.host, 8, 0)).as("the batch after a failed one").isEqualTo(data);
      assertThat(f.engine.inFlight()).isZero();
    }
  }

  /**
   * Out-of-range pages and layers are rejected at submission, naming the value.
   *
   * @throws Exception on failure
   */
  @Test
  public void submitRejectsOutOfRangePagesAndLayers() throws Exception {
    try (TransferFixture f = open()) {
      int badDevice = devicePages() + 5;
      int badHost = hostPages() + 7;
      int badLayer = layout().layers() + 4;
      assertThatThrownBy(() -> f.engine.submit(Batches.single(DEVICE_TO_HOST, badDevice, 0)))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining(String.valueOf(badDevice));
      assertThatThrownBy(() -> f.engine.submit(Batches.single(HOST_TO_DEVICE, 0, badHost)))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining(String.valueOf(badHost));
      assertThatThrownBy(
              () ->
                  f.engine.submit(
                      TransferBatch.oneLayer(
                          HOST_TO_DEVICE, new int[] {0}, new int[] {0}, badLayer)))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining(String.valueOf(badLayer));
      assertThat(f.engine.inFlight()).as("inFlight() after rejected batches").isZero();
    }
  }

  /**
   * Closing waits for the batches in flight; a closed engine rejects batches; close is
   * idempotent.
   *
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @Test
  public void closeWaitsForInFlightAndThenRejects(Random random) throws Exception {
    try (TransferFixture f = open()) {
      List<TransferHandle> handles = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        TransferDirection d = random.nextBoolean() ? DEVICE_TO_HOST : HOST_TO_DEVICE;
        // Distinct pages per direction, so no copy reads a page the other direction writes.
        handles.add(
            f.engine.submit(
                d == DEVICE_TO_HOST
                    ? Batches.single(d, i % 4, i % 4)
                    : Batches.single(d, 4 + i % 4, 4 + i % 4)));
      }
      f.whileDriving(
          () -> {
            f.engine.close();
            return null;
          });
      for (TransferHandle h : handles) {
        assertThat(h.isDone()).as("handle seq %d after close()", h.sequence()).isTrue();
      }
      assertThat(f.engine.inFlight()).isZero();
      assertThatThrownBy(() -> f.engine.submit(Batches.single(DEVICE_TO_HOST, 0, 0)))
          .isInstanceOf(IllegalStateException.class);
      f.engine.close();
    }
  }
}
