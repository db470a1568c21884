package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class SimMemoryTest {

  private static final KvLayout LAYOUT = new KvLayout(3, 2, 4, 2, 2); // 64-byte blocks

  static Stream<Arguments> pools() {
    return Stream.of(MemoryLayout.values())
        .flatMap(ml -> Stream.of(Arguments.of("device", ml), Arguments.of("host", ml)));
  }

  private static PageMemory open(String kind, MemoryLayout memoryLayout, int pages) {
    PoolSpec spec = new PoolSpec(LAYOUT, pages, memoryLayout);
    return kind.equals("device")
        ? new SimDeviceMemoryProvider().open(spec, BackendContext.defaults())
        : new SimHostMemoryProvider().open(spec, BackendContext.defaults());
  }

  /** A byte that differs for every (page, layer, index) of a small pool. */
  static byte pattern(int page, int layer, long index) {
    return (byte) (page * 31 + layer * 7 + index * 3 + 1);
  }

  @ParameterizedTest
  @MethodSource("pools")
  void everyBlockHoldsItsOwnBytes(String kind, MemoryLayout memoryLayout) {
    int pages = 5;
    long blockBytes = LAYOUT.pageBytesPerLayer();
    try (PageMemory pool = open(kind, memoryLayout, pages);
        Arena arena = Arena.ofConfined()) {
      MemorySegment buf = arena.allocate(blockBytes);
      for (int page = 0; page < pages; page++) {
        for (int layer = 0; layer < LAYOUT.layers(); layer++) {
          pool.read(page, layer, 0, buf);
          assertThat(buf.toArray(ValueLayout.JAVA_BYTE)).as("zero-filled").containsOnly(0);
          for (long i = 0; i < blockBytes; i++) {
            buf.set(ValueLayout.JAVA_BYTE, i, pattern(page, layer, i));
          }
          pool.write(page, layer, 0, buf);
        }
      }
      // Read back after every write: blocks that overlapped would have overwritten each other.
      for (int page = 0; page < pages; page++) {
        for (int layer = 0; layer < LAYOUT.layers(); layer++) {
          buf.fill((byte) 0);
          pool.read(page, layer, 0, buf);
          for (long i = 0; i < blockBytes; i++) {
            assertThat(buf.get(ValueLayout.JAVA_BYTE, i)).isEqualTo(pattern(page, layer, i));
          }
        }
      }
    }
  }

  @Test
  void blocksSitWhereTheMemoryLayoutSays() {
    for (MemoryLayout ml : MemoryLayout.values()) {
      try (SimHostMemory host =
              new SimHostMemoryProvider()
                  .open(new PoolSpec(LAYOUT, 4, ml), BackendContext.defaults());
          Arena arena = Arena.ofConfined()) {
        MemorySegment one = arena.allocate(1);
        one.set(ValueLayout.JAVA_BYTE, 0, (byte) 9);
        host.write(3, 1, 5, one);
        long expected = ml.blockOffset(LAYOUT, 4, 3, 1) + 5;
        MemorySegment whole = host.pool().memory();
        assertThat(whole.get(ValueLayout.JAVA_BYTE, expected)).as(ml.name()).isEqualTo((byte) 9);
        assertThat(host.block(3, 1).get(ValueLayout.JAVA_BYTE, 5)).isEqualTo((byte) 9);
        assertThat(host.block(3, 1).byteSize()).isEqualTo(LAYOUT.pageBytesPerLayer());
      }
    }
  }

  @ParameterizedTest
  @MethodSource("pools")
  void partialReadsAndWritesUseTheOffset(String kind, MemoryLayout memoryLayout) {
    try (PageMemory pool = open(kind, memoryLayout, 2);
        Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(4);
      src.copyFrom(MemorySegment.ofArray(new byte[] {1, 2, 3, 4}));
      pool.write(1, 2, 60, src);
      MemorySegment dst = arena.allocate(6);
      pool.read(1, 2, 58, dst);
      assertThat(dst.toArray(ValueLayout.JAVA_BYTE)).containsExactly(0, 0, 1, 2, 3, 4);
    }
  }

  @ParameterizedTest
  @MethodSource("pools")
  void rejectsOutOfRangeAddressesNamingTheValueAndTheBound(String kind, MemoryLayout memoryLayout) {
    try (PageMemory pool = open(kind, memoryLayout, 2);
        Arena arena = Arena.ofConfined()) {
      MemorySegment buf = arena.allocate(8);
      assertThatThrownBy(() -> pool.write(2, 0, 0, buf))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining("page=2 pages=2");
      assertThatThrownBy(() -> pool.read(-1, 0, 0, buf))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining("page=-1 pages=2");
      assertThatThrownBy(() -> pool.read(0, 3, 0, buf))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining("layer=3 layers=3");
      assertThatThrownBy(() -> pool.write(0, 0, 57, buf))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining("offset=57 length=8 blockBytes=64");
      assertThatThrownBy(() -> pool.read(0, 0, -1, buf))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining("offset=-1 length=8 blockBytes=64");
      assertThatThrownBy(() -> pool.read(0, 0, 0, arena.allocate(65)))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining("offset=0 length=65 blockBytes=64");
    }
  }

  @ParameterizedTest
  @MethodSource("pools")
  void aClosedPoolThrowsIllegalState(String kind, MemoryLayout memoryLayout) {
    PageMemory pool = open(kind, memoryLayout, 2);
    pool.close();
    pool.close(); // idempotent
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment buf = arena.allocate(8);
      assertThatThrownBy(() -> pool.read(0, 0, 0, buf))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
      assertThatThrownBy(() -> pool.write(0, 0, 0, buf))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
    }
    if (pool instanceof SimHostMemory host) {
      assertThatThrownBy(() -> host.block(0, 0)).isInstanceOf(IllegalStateException.class);
    }
    if (pool instanceof SimDeviceMemory device) {
      assertThatThrownBy(() -> device.block(0, 0)).isInstanceOf(IllegalStateException.class);
    }
  }

  @Test
  void blocksAreUsableFromOtherThreads() throws Exception {
    try (SimHostMemory host =
        new SimHostMemoryProvider()
            .open(new PoolSpec(LAYOUT, 2, MemoryLayout.PAGE_FIRST), BackendContext.defaults())) {
      MemorySegment block = host.block(1, 1);
      Thread t = Thread.ofPlatform().start(() -> block.set(ValueLayout.JAVA_BYTE, 0, (byte) 7));
      t.join();
      assertThat(host.block(1, 1).get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 7);
    }
  }

  @Test
  void hostIsNotPinned() {
    try (SimHostMemory host =
        new SimHostMemoryProvider()
            .open(new PoolSpec(LAYOUT, 1, MemoryLayout.LAYER_FIRST), BackendContext.defaults())) {
      assertThat(host.pinned()).isFalse();
      assertThat(host.spec().pages()).isEqualTo(1);
    }
  }

  @Test
  void aPoolTooLargeForTheJvmFailsWithAClearMessage() {
    // 2^31 - 1 pages of 2^20 bytes: about 2 PiB, far beyond any off-heap limit.
    KvLayout big = new KvLayout(16, 8, 128, 2, 32);
    PoolSpec spec = new PoolSpec(big, Integer.MAX_VALUE, MemoryLayout.LAYER_FIRST);
    assertThatThrownBy(() -> new SimDeviceMemoryProvider().open(spec, BackendContext.defaults()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bytes=" + spec.bytes())
        .hasMessageContaining("fewer pages");
  }

  @Test
  void openRejectsUnknownSimKeys() {
    BackendContext context = BackendContext.defaults().withRank(0);
    BackendContext bad =
        new BackendContext(0, Map.of("sim.nope", "1"), context.time(), context.metrics());
    PoolSpec spec = new PoolSpec(LAYOUT, 1, MemoryLayout.LAYER_FIRST);
    assertThatThrownBy(() -> new SimDeviceMemoryProvider().open(spec, bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sim.nope");
    assertThatThrownBy(() -> new SimHostMemoryProvider().open(spec, bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sim.nope");
  }
}
