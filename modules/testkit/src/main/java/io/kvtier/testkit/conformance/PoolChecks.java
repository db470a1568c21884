package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.PageMemory;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

/** Checks of the {@link PageMemory} contract shared by the device and the host suites. */
final class PoolChecks {

  private PoolChecks() {}

  static void assertZeroFilled(PageMemory pool, String name) {
    byte[] zeros = new byte[Math.toIntExact(Blocks.blockBytes(pool))];
    for (int p = 0; p < pool.spec().pages(); p++) {
      for (int l = 0; l < pool.spec().layout().layers(); l++) {
        assertThat(Blocks.read(pool, p, l))
            .as("%s of a new pool must be zero", Blocks.where(name, p, l))
            .isEqualTo(zeros);
      }
    }
  }

  /** Writes every block first and reads them all after, so overlapping blocks show. */
  static void assertRoundTrip(PageMemory pool, String name, Random random) {
    int pages = pool.spec().pages();
    int layers = pool.spec().layout().layers();
    byte[][][] written = new byte[pages][layers][];
    for (int p = 0; p < pages; p++) {
      for (int l = 0; l < layers; l++) {
        written[p][l] = Blocks.fillRandom(pool, p, l, random);
      }
    }
    for (int p = 0; p < pages; p++) {
      for (int l = 0; l < layers; l++) {
        assertThat(Blocks.read(pool, p, l))
            .as("%s read back after writing every block", Blocks.where(name, p, l))
            .isEqualTo(written[p][l]);
      }
    }
  }

  /** A write at an offset changes only its range; a read at an offset returns only its range. */
  static void assertPartialWriteAndRead(PageMemory pool, String name, Random random) {
    int block = Math.toIntExact(Blocks.blockBytes(pool));
    int page = random.nextInt(pool.spec().pages());
    int layer = random.nextInt(pool.spec().layout().layers());
    byte[] before = Blocks.fillRandom(pool, page, layer, random);
    int offset = 1 + random.nextInt(block - 1);
    byte[] patch = new byte[1 + random.nextInt(block - offset)];
    random.nextBytes(patch);
    pool.write(page, layer, offset, MemorySegment.ofArray(patch));
    byte[] expected = before.clone();
    System.arraycopy(patch, 0, expected, offset, patch.length);
    assertThat(Blocks.read(pool, page, layer))
        .as(
            "%s after writing %d bytes at offset %d",
            Blocks.where(name, page, layer), patch.length, offset)
        .isEqualTo(expected);
    byte[] part = new byte[patch.length];
    pool.read(page, layer, offset, MemorySegment.ofArray(part));
    assertThat(part).as("read of %d bytes at offset %d", part.length, offset).isEqualTo(patch);
    byte[] tail = new byte[1];
    pool.read(page, layer, block - 1, MemorySegment.ofArray(tail));
    assertThat(tail[0]).as("last byte of the block").isEqualTo(expected[block - 1]);
  }

  /** Expects a fresh (zero-filled) pool. */
  static void assertBoundsChecked(PageMemory pool) {
    int pages = pool.spec().pages();
    int layers = pool.spec().layout().layers();
    long block = Blocks.blockBytes(pool);
    MemorySegment one = MemorySegment.ofArray(new byte[1]);
    MemorySegment two = MemorySegment.ofArray(new byte[2]);
    MemorySegment tooBig = MemorySegment.ofArray(new byte[Math.toIntExact(block + 1)]);
    expectOutOfRange(() -> pool.read(-1, 0, 0, one), "-1", "read(page=-1)");
    expectOutOfRange(
        () -> pool.write(pages + 3, 0, 0, one), String.valueOf(pages + 3), "write(page=pages+3)");
    expectOutOfRange(() -> pool.read(0, -3, 0, one), "-3", "read(layer=-3)");
    expectOutOfRange(
        () -> pool.write(0, layers + 2, 0, one),
        String.valueOf(layers + 2),
        "write(layer=layers+2)");
    expectOutOfRange(() -> pool.read(0, 0, -5, one), "-5", "read(offset=-5)");
    expectOutOfRange(
        () -> pool.write(0, 0, block - 1, two),
        String.valueOf(block - 1),
        "write of 2 bytes at the block's last byte");
    expectOutOfRange(
        () -> pool.read(0, 0, 0, tooBig), String.valueOf(block + 1), "read of blockBytes+1 bytes");
    // The pool is fresh, so block (0, 0) is zero unless a rejected write wrote part of it.
    assertThat(Blocks.read(pool, 0, 0))
        .as("block (0, 0) after a rejected write that overran it")
        .isEqualTo(new byte[Math.toIntExact(block)]);
  }

  static void expectOutOfRange(ThrowingCallable call, String value, String what) {
    assertThatThrownBy(call)
        .as(what)
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining(value);
  }

  static void assertClosed(PageMemory pool) {
    MemorySegment one = MemorySegment.ofArray(new byte[1]);
    assertThatThrownBy(() -> pool.read(0, 0, 0, one))
        .as("read() on a closed pool")
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> pool.write(0, 0, 0, one))
        .as("write() on a closed pool")
        .isInstanceOf(IllegalStateException.class);
  }
}
