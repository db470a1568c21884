package io.kvtier.backend.sim;

import static io.kvtier.backend.sim.SimPools.block;
import static io.kvtier.backend.sim.SimPools.filled;
import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.asserting.AssertingDeviceMemory;
import io.kvtier.asserting.AssertingTransferEngine;
import io.kvtier.asserting.PageOwnership;
import io.kvtier.spi.TransferHandle;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** Each assertion of the asserting pools and engine fires, with a message that says what broke. */
class AssertingPoolsTest {

  @Test
  void doubleFreeFails() {
    try (SimPools p = new SimPools()) {
      p.device.ownership().allocate(3);
      p.device.ownership().free(3);
      assertThatThrownBy(() -> p.device.ownership().free(3))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("device page 3")
          .hasMessageContaining("double free");
    }
  }

  @Test
  void freeOfAPageNeverAllocatedAndAllocatingTwiceFail() {
    try (SimPools p = new SimPools()) {
      assertThatThrownBy(() -> p.host.ownership().free(1))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("host page 1 freed but never marked allocated");
      p.host.ownership().allocate(2);
      assertThatThrownBy(() -> p.host.ownership().allocate(2))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("host page 2 allocated twice");
    }
  }

  @Test
  void useOfAFreedPageFailsForReadWriteBlockAndCopies() {
    try (SimPools p = new SimPools()) {
      p.device.ownership().allocate(5);
      p.device.ownership().free(5);
      p.host.ownership().allocate(6);
      p.host.ownership().free(6);
      assertThatThrownBy(() -> p.device.read(5, 0, 0, block()))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("read() of device page 5 after it was freed (use after free)");
      assertThatThrownBy(() -> p.device.write(5, 1, 0, block()))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("use after free");
      assertThatThrownBy(() -> p.host.block(6, 0))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("host page 6");
      assertThatThrownBy(() -> p.copy(DEVICE_TO_HOST, 5, 0))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("D2H copy from of device page 5");
      assertThatThrownBy(() -> p.copy(DEVICE_TO_HOST, 0, 6))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("D2H copy of host page 6");
      assertThat(p.engine.inFlight()).as("rejected copies never reach the delegate").isZero();
    }
  }

  @Test
  void readingADestinationBeforeItsCopyIsDoneFails() throws Exception {
    try (SimPools p = new SimPools()) {
      p.device.write(1, 0, 0, filled((byte) 7));
      TransferHandle h = p.copy(DEVICE_TO_HOST, 1, 2);
      assertThat(h.isDone()).isFalse();
      assertThatThrownBy(() -> p.host.read(2, 0, 0, block()))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining(
              "read() of host page 2 layer 0 while its incoming"
                  + " DEVICE_TO_HOST copy seq 0 has not completed");
      p.complete(h);
      var got = block();
      p.host.read(2, 0, 0, got);
      assertThat(got.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 7);
    }
  }

  @Test
  void aOneLayerLoadBlocksOnlyItsLayer() throws Exception {
    try (SimPools p = new SimPools()) {
      TransferHandle h = p.copyLayer(HOST_TO_DEVICE, 4, 4, 0);
      assertThatCode(() -> p.device.read(4, 1, 0, block()))
          .as("layer 1 has no copy in flight")
          .doesNotThrowAnyException();
      assertThatThrownBy(() -> p.device.read(4, 0, 0, block()))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("device page 4 layer 0");
      p.complete(h);
      p.device.read(4, 0, 0, block());
    }
  }

  @Test
  void freeingOrOverwritingASourceWhileItIsCopiedFails() throws Exception {
    try (SimPools p = new SimPools()) {
      p.device.ownership().allocate(4);
      TransferHandle h = p.copy(DEVICE_TO_HOST, 4, 3);
      assertThatThrownBy(() -> p.device.ownership().free(4))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining(
              "device page 4 freed while DEVICE_TO_HOST copy seq 0 still reads" + " it");
      assertThatThrownBy(() -> p.device.write(4, 1, 0, block()))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining(
              "overwrites device page 4 layer 1 that DEVICE_TO_HOST copy seq 0" + " still reads");
      assertThatThrownBy(() -> p.copy(HOST_TO_DEVICE, 4, 5))
          .as("a load into a page that a backup still reads")
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("H2D copy overwrites device page 4");
      p.complete(h);
      p.device.ownership().free(4);
      assertThat(p.device.ownership().state(4)).isEqualTo(PageOwnership.State.FREED);
    }
  }

  @Test
  void copyingFromAPageWhoseOwnCopyIsNotDoneFails() throws Exception {
    try (SimPools p = new SimPools()) {
      TransferHandle load = p.copy(HOST_TO_DEVICE, 6, 1);
      assertThatThrownBy(() -> p.copy(DEVICE_TO_HOST, 6, 7))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining(
              "D2H copy from of device page 6 while its incoming"
                  + " HOST_TO_DEVICE copy seq 0 has not completed");
      p.complete(load);
      p.complete(p.copy(DEVICE_TO_HOST, 6, 7));
    }
  }

  @Test
  void closingAPoolWithAnOpenEngineOrACopyInFlightFails() throws Exception {
    SimPools p = new SimPools();
    TransferHandle h = p.copy(DEVICE_TO_HOST, 0, 0);
    assertThatThrownBy(p.device::close)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("closing the device pool while 1 transfer engine(s) on it are open");
    assertThatThrownBy(p.host::close)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("closing the host pool while 1 transfer engine(s)");
    p.complete(h);
    p.close();
    assertThat(AssertingDeviceMemory.openPools()).doesNotContain(p.device);
  }

  @Test
  void closingAPoolWithACopyInFlightFails() {
    ManualTransferEngine fake = new ManualTransferEngine();
    SimPools sim = new SimPools();
    sim.engine.close();
    AssertingDeviceMemory device =
        new AssertingDeviceMemory(
            sim.device.delegate(),
            e -> {
              e.close();
              return fake;
            });
    var engine = device.transferEngine(sim.host);
    engine.submit(
        io.kvtier.spi.TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {0}, new int[] {3}));
    engine.close();
    assertThatThrownBy(device::close)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(
            "closing the device pool while DEVICE_TO_HOST copy seq 0 on device"
                + " page 0 is in flight");
    assertThatThrownBy(sim.host::close)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(
            "closing the host pool while DEVICE_TO_HOST copy seq 0 on host page"
                + " 3 is in flight");
    fake.complete(DEVICE_TO_HOST, 0, false);
    device.close();
    sim.close();
  }

  @Test
  void anEngineThatBreaksFifoIsCaught() {
    ManualTransferEngine fake = new ManualTransferEngine();
    AssertingTransferEngine engine =
        new AssertingTransferEngine(
            fake, new PageOwnership("device", 4), new PageOwnership("host", 4));
    TransferHandle first =
        engine.submit(
            io.kvtier.spi.TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {0}));
    TransferHandle second =
        engine.submit(
            io.kvtier.spi.TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {1}, new int[] {1}));
    TransferHandle other =
        engine.submit(
            io.kvtier.spi.TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {2}, new int[] {2}));
    fake.complete(DEVICE_TO_HOST, 0, false);
    assertThat(other.isDone()).as("the other direction is independent").isTrue();
    fake.complete(HOST_TO_DEVICE, 1, false);
    assertThatThrownBy(second::isDone)
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("HOST_TO_DEVICE copy seq 1 is done but the earlier seq 0 is not");
    fake.complete(HOST_TO_DEVICE, 0, true);
    assertThat(second.isDone()).isTrue();
    assertThat(first.failure()).isPresent();
    engine.close();
  }

  @Test
  void delegateExceptionsPassThrough() {
    try (SimPools p = new SimPools()) {
      assertThatThrownBy(() -> p.device.read(SimPools.PAGES + 1, 0, 0, block()))
          .isInstanceOf(IndexOutOfBoundsException.class);
      assertThatThrownBy(() -> p.copy(DEVICE_TO_HOST, 0, SimPools.PAGES + 4))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining(String.valueOf(SimPools.PAGES + 4));
    }
  }
}
