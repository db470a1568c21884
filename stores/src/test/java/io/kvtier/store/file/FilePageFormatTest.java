package io.kvtier.store.file;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageKey;
import io.kvtier.store.internal.TestHostMemory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class FilePageFormatTest {

  private static final KvLayout LAYOUT = new KvLayout(2, 1, 4, 2, 2);
  private static final PageKey KEY = TestHostMemory.keys(1, 42).getFirst();

  @Test
  void namesAPageFileByItsKeyShardedByTheFirstTwoHexDigits() {
    Path file = FilePageFormat.pageFile(Path.of("/root"), KEY);
    String hex = KEY.toHex();
    assertThat(file).isEqualTo(Path.of("/root", hex.substring(0, 2), hex + ".page"));
    assertThat(FilePageFormat.keyOf(file)).contains(KEY);
  }

  @Test
  void otherFileNamesAreNotPages() {
    String hex = KEY.toHex();
    assertThat(FilePageFormat.keyOf(Path.of("/r", "zz", hex + ".page"))).isEmpty();
    assertThat(FilePageFormat.keyOf(Path.of("/r", hex.substring(0, 2), hex + ".tmp"))).isEmpty();
    assertThat(FilePageFormat.keyOf(Path.of("/r", hex.substring(0, 2), "notes.txt"))).isEmpty();
  }

  @Test
  void aHeaderReadsBackItsPayloadChecksum() throws Exception {
    ByteBuffer header = FilePageFormat.header(LAYOUT, KEY, LAYOUT.pageBytes(), 0xCAFEBABE);
    assertThat(header.remaining()).isEqualTo(FilePageFormat.HEADER_BYTES);
    assertThat(FilePageFormat.payloadCrc(header, LAYOUT, KEY, LAYOUT.pageBytes()))
        .isEqualTo(0xCAFEBABE);
  }

  @Test
  void everyFlippedBitOfAHeaderIsCaught() {
    ByteBuffer header = FilePageFormat.header(LAYOUT, KEY, LAYOUT.pageBytes(), 7);
    for (int bit = 0; bit < FilePageFormat.HEADER_BYTES * 8; bit++) {
      ByteBuffer damaged =
          ByteBuffer.allocate(FilePageFormat.HEADER_BYTES).put(header.duplicate()).flip();
      damaged.put(bit / 8, (byte) (damaged.get(bit / 8) ^ (1 << (bit % 8))));
      int flipped = bit;
      assertThatThrownBy(() -> FilePageFormat.payloadCrc(damaged, LAYOUT, KEY, LAYOUT.pageBytes()))
          .as("bit %d", flipped)
          .isInstanceOf(DamagedPageException.class);
    }
  }

  @Test
  void aHeaderOfAnotherLayoutKeyOrLengthIsNamed() {
    PageKey other = TestHostMemory.keys(2, 42).get(1);
    KvLayout wider = new KvLayout(2, 2, 4, 2, 2);
    List<Object[]> cases =
        List.of(
            new Object[] {FilePageFormat.header(wider, KEY, LAYOUT.pageBytes(), 0), "layout"},
            new Object[] {FilePageFormat.header(LAYOUT, other, LAYOUT.pageBytes(), 0), "holds key"},
            new Object[] {FilePageFormat.header(LAYOUT, KEY, 12, 0), "payload length 12"});
    for (Object[] c : cases) {
      assertThatThrownBy(
              () -> FilePageFormat.payloadCrc((ByteBuffer) c[0], LAYOUT, KEY, LAYOUT.pageBytes()))
          .isInstanceOf(DamagedPageException.class)
          .hasMessageContaining((String) c[1]);
    }
  }
}
