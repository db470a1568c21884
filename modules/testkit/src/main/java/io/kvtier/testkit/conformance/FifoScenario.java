package io.kvtier.testkit.conformance;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.PageMemory;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferHandle;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;

/**
 * Random batches in both directions, with the FIFO invariant checked after every step and the
 * final bytes checked against a model of "last copy wins".
 *
 * <p>The directions use disjoint pages (D2H reads the lower device half and writes the lower host
 * half, H2D the upper halves), so no copy reads what the other direction writes: the outcome is
 * defined whatever the relative timing of the two directions.
 */
final class FifoScenario {
  private final TransferFixture f;
  private final int layers;
  private final int deviceHalf;
  private final int hostHalf;
  private final int devicePages;
  private final int hostPages;
  private final Random random;
  private final Map<TransferDirection, List<TransferHandle>> handles = Batches.byDirection();
  // What each destination block must hold at the end: the source block of its last copy.
  private final byte[][][] expectedHost;
  private final byte[][][] expectedDevice;

  FifoScenario(TransferFixture f, int layers, int devicePages, int hostPages, Random random) {
    this.f = f;
    this.layers = layers;
    this.devicePages = devicePages;
    this.hostPages = hostPages;
    this.deviceHalf = devicePages / 2;
    this.hostHalf = hostPages / 2;
    this.random = random;
    this.expectedHost = new byte[hostPages][layers][];
    this.expectedDevice = new byte[devicePages][layers][];
  }

  void run(int batches) throws InterruptedException {
    byte[][][] deviceSource = new byte[devicePages][layers][];
    byte[][][] hostSource = new byte[hostPages][layers][];
    byte[] zeros = new byte[Math.toIntExact(Blocks.blockBytes(f.device))];
    for (int l = 0; l < layers; l++) {
      for (int p = 0; p < deviceHalf; p++) {
        deviceSource[p][l] = Blocks.fillRandom(f.device, p, l, random);
      }
      for (int p = hostHalf; p < hostPages; p++) {
        hostSource[p][l] = Blocks.fillRandom(f.host, p, l, random);
      }
      for (int p = 0; p < hostHalf; p++) {
        expectedHost[p][l] = zeros;
      }
      for (int p = deviceHalf; p < devicePages; p++) {
        expectedDevice[p][l] = zeros;
      }
    }
    for (int i = 0; i < batches; i++) {
      TransferDirection d = random.nextBoolean() ? DEVICE_TO_HOST : HOST_TO_DEVICE;
      TransferBatch batch = randomBatch(d);
      TransferHandle h = f.engine.submit(batch);
      List<TransferHandle> list = handles.get(d);
      assertThat(h.sequence())
          .as("sequence of the %d-th %s batch", list.size(), d)
          .isEqualTo(list.size());
      assertThat(h.batch()).isEqualTo(batch);
      list.add(h);
      record(batch, deviceSource, hostSource);
      checkFifo();
    }
    for (TransferDirection d : TransferDirection.values()) {
      for (TransferHandle h : handles.get(d)) {
        f.drive(h);
        checkFifo();
        h.await();
      }
    }
    assertThat(f.engine.inFlight()).as("inFlight() once every batch is done").isZero();
    verify(f.host, expectedHost, "host");
    verify(f.device, expectedDevice, "device");
  }

  private TransferBatch randomBatch(TransferDirection d) {
    int size = 1 + random.nextInt(Math.min(4, Math.min(deviceHalf, hostHalf)));
    int[] device = new int[size];
    int[] host = new int[size];
    // Destinations distinct within a batch: the order of copies inside one batch is not defined.
    int[] dest =
        Batches.permutation(d == DEVICE_TO_HOST ? hostHalf : devicePages - deviceHalf, random);
    for (int i = 0; i < size; i++) {
      if (d == DEVICE_TO_HOST) {
        device[i] = random.nextInt(deviceHalf);
        host[i] = dest[i];
      } else {
        device[i] = deviceHalf + dest[i];
        host[i] = hostHalf + random.nextInt(hostPages - hostHalf);
      }
    }
    OptionalInt layer =
        random.nextBoolean() ? OptionalInt.empty() : OptionalInt.of(random.nextInt(layers));
    return new TransferBatch(d, device, host, layer);
  }

  private void record(TransferBatch b, byte[][][] deviceSource, byte[][][] hostSource) {
    for (int i = 0; i < b.size(); i++) {
      for (int l = 0; l < layers; l++) {
        if (b.layer().isPresent() && b.layer().getAsInt() != l) {
          continue;
        }
        if (b.direction() == DEVICE_TO_HOST) {
          expectedHost[b.hostPage(i)][l] = deviceSource[b.devicePage(i)][l];
        } else {
          expectedDevice[b.devicePage(i)][l] = hostSource[b.hostPage(i)][l];
        }
      }
    }
  }

  /** Reads later handles first: a later one seen done makes every earlier read a real check. */
  private void checkFifo() {
    for (TransferDirection d : TransferDirection.values()) {
      List<TransferHandle> list = handles.get(d);
      long laterDone = -1;
      for (int i = list.size() - 1; i >= 0; i--) {
        boolean done = list.get(i).isDone();
        if (done && laterDone < 0) {
          laterDone = i;
        } else if (!done && laterDone >= 0) {
          throw new AssertionError(
              d
                  + " batch seq "
                  + i
                  + " is not done although the later seq "
                  + laterDone
                  + " was already done: completion must be FIFO per direction");
        }
      }
    }
  }

  private void verify(PageMemory pool, byte[][][] expected, String name) {
    for (int p = 0; p < expected.length; p++) {
      for (int l = 0; l < layers; l++) {
        if (expected[p][l] != null) {
          assertThat(Blocks.read(pool, p, l))
              .as("%s: the last copy into it must win", Blocks.where(name, p, l))
              .isEqualTo(expected[p][l]);
        }
      }
    }
  }
}
