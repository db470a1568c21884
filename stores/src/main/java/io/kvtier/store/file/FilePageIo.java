package io.kvtier.store.file;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageKey;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * Moves one page between host blocks and a page file, without an intermediate copy: the host
 * blocks' segments are handed to the channel as buffers.
 */
final class FilePageIo {

  private FilePageIo() {}

  /**
   * Writes a new page file (which must not exist) from a host page.
   *
   * <p>The checksum is taken over the host bytes just before they are written; if the engine
   * changed the host page in between (it must not), the file fails its check on read and is a
   * counted miss, never wrong data.
   */
  static void write(
      Path file, KvLayout layout, PageKey key, HostMemory host, int hostPage, boolean fsync)
      throws IOException {
    int layers = layout.layers();
    ByteBuffer[] buffers = new ByteBuffer[layers + 1];
    CRC32C crc = new CRC32C();
    for (int layer = 0; layer < layers; layer++) {
      ByteBuffer block = host.block(hostPage, layer).asByteBuffer();
      crc.update(block.duplicate());
      buffers[layer + 1] = block;
    }
    buffers[0] = FilePageFormat.header(layout, key, layout.pageBytes(), (int) crc.getValue());
    long remaining = FilePageFormat.HEADER_BYTES + layout.pageBytes();
    try (FileChannel channel =
        FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      while (remaining > 0) {
        remaining -= channel.write(buffers);
      }
      if (fsync) {
        channel.force(true);
      }
    }
  }

  /**
   * Reads and verifies a page file into a host page. On any failure the host page holds
   * undefined bytes.
   *
   * @throws java.nio.file.NoSuchFileException if the file is absent
   * @throws DamagedPageException if the file is not a whole, intact page of this key and layout
   * @throws IOException if reading fails for another reason
   */
  static void read(Path file, KvLayout layout, PageKey key, HostMemory host, int hostPage)
      throws IOException, DamagedPageException {
    long payloadBytes = layout.pageBytes();
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = channel.size();
      if (size != FilePageFormat.HEADER_BYTES + payloadBytes) {
        throw new DamagedPageException(
            size + " bytes long, a page file is " + (FilePageFormat.HEADER_BYTES + payloadBytes));
      }
      ByteBuffer header = ByteBuffer.allocate(FilePageFormat.HEADER_BYTES);
      readFully(channel, header);
      int expected = FilePageFormat.payloadCrc(header.flip(), layout, key, payloadBytes);
      CRC32C crc = new CRC32C();
      for (int layer = 0; layer < layout.layers(); layer++) {
        ByteBuffer block = host.block(hostPage, layer).asByteBuffer();
        readFully(channel, block);
        crc.update(block.flip());
      }
      if ((int) crc.getValue() != expected) {
        throw new DamagedPageException("payload checksum does not match");
      }
    }
  }

  private static void readFully(FileChannel channel, ByteBuffer into)
      throws IOException, DamagedPageException {
    while (into.hasRemaining()) {
      // The size was checked, so an early end means the file shrank while being read.
      if (channel.read(into) < 0) {
        throw new DamagedPageException("ended early at byte " + channel.position());
      }
    }
  }
}
