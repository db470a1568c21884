package io.kvtier.store.file;

import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageKey;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;

/**
 * The on-disk form of one page: where its file is, and its header.
 *
 * <p>A page file is an {@value #HEADER_BYTES}-byte header followed by the payload, the page's
 * (page, layer) blocks in layer order. The header, big-endian:
 *
 * <pre>
 *  0  magic "kvtierL3"           8 bytes
 *  8  format version             int ({@value #VERSION})
 * 12  header length              int ({@value #HEADER_BYTES})
 * 16  layers, kvHeads, headDim,
 *     dtypeBytes, pageSize       5 ints: the KV layout, compared field by field
 * 36  key                        32 bytes
 * 68  payload length             long
 * 76  payload CRC32C             int
 * 80  header CRC32C              int, over bytes 0..79
 * </pre>
 *
 * <p>The key in the header catches a file that sits under another key's name; the header
 * checksum catches damage to the fields that the payload checksum does not cover.
 */
final class FilePageFormat {

  /** Bytes before the payload. */
  static final int HEADER_BYTES = 84;

  /** The format this code writes and reads. */
  static final int VERSION = 1;

  /** Suffix of a page file. */
  static final String PAGE_SUFFIX = ".page";

  /** Suffix of a page file being written. */
  static final String TEMP_SUFFIX = ".tmp";

  private static final byte[] MAGIC = "kvtierL3".getBytes(StandardCharsets.US_ASCII);
  private static final int HEADER_CRC_AT = 80;
  private static final Pattern PAGE_NAME = Pattern.compile("[0-9a-f]{64}\\.page");

  private FilePageFormat() {}

  /** {@code root/<first 2 hex digits>/<64 hex digits>.page}: 256 subdirectories keep each small. */
  static Path pageFile(Path root, PageKey key) {
    String hex = key.toHex();
    return root.resolve(hex.substring(0, 2)).resolve(hex + PAGE_SUFFIX);
  }

  /**
   * The key of a page file's path, if the path is one that {@link #pageFile} gives.
   *
   * @param file a path under a store's root
   * @return the key, or empty for any other file
   */
  static Optional<PageKey> keyOf(Path file) {
    String name = file.getFileName().toString();
    Path parent = file.getParent();
    if (!PAGE_NAME.matcher(name).matches()
        || parent == null
        || !parent.getFileName().toString().equals(name.substring(0, 2))) {
      return Optional.empty();
    }
    return Optional.of(PageKey.of(HexFormat.of().parseHex(name, 0, 64)));
  }

  /** The header of a page, ready to write (position 0, limit {@value #HEADER_BYTES}). */
  static ByteBuffer header(KvLayout layout, PageKey key, long payloadBytes, int payloadCrc) {
    ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES);
    b.put(MAGIC).putInt(VERSION).putInt(HEADER_BYTES);
    b.putInt(layout.layers())
        .putInt(layout.kvHeads())
        .putInt(layout.headDim())
        .putInt(layout.dtypeBytes())
        .putInt(layout.pageSize());
    b.put(key.toBytes()).putLong(payloadBytes).putInt(payloadCrc);
    b.putInt(headerCrc(b));
    return b.flip();
  }

  /**
   * Checks a header read from a page file against what the store expects there.
   *
   * @param header the {@value #HEADER_BYTES} header bytes, position 0
   * @param layout the store's layout
   * @param key the key the file was opened for
   * @param payloadBytes the store's page size in bytes
   * @return the payload's CRC32C recorded in the header
   * @throws DamagedPageException naming the first field that differs
   */
  static int payloadCrc(ByteBuffer header, KvLayout layout, PageKey key, long payloadBytes)
      throws DamagedPageException {
    byte[] magic = new byte[MAGIC.length];
    header.get(0, magic);
    if (!Arrays.equals(magic, MAGIC)) {
      throw new DamagedPageException("not a kvtier page file (bad magic)");
    }
    int version = header.getInt(8);
    if (version != VERSION) {
      throw new DamagedPageException("format version " + version + ", this store reads " + VERSION);
    }
    if (header.getInt(12) != HEADER_BYTES) {
      throw new DamagedPageException(
          "header length " + header.getInt(12) + ", expected " + HEADER_BYTES);
    }
    if (header.getInt(HEADER_CRC_AT) != headerCrc(header)) {
      throw new DamagedPageException("header checksum does not match");
    }
    KvLayout found =
        new KvLayout(
            header.getInt(16),
            header.getInt(20),
            header.getInt(24),
            header.getInt(28),
            header.getInt(32));
    if (!found.equals(layout)) {
      throw new DamagedPageException("layout " + found + ", the store's is " + layout);
    }
    byte[] keyBytes = new byte[32];
    header.get(36, keyBytes);
    if (!Arrays.equals(keyBytes, key.toBytes())) {
      throw new DamagedPageException("holds key " + PageKey.of(keyBytes).toHex());
    }
    long length = header.getLong(68);
    if (length != payloadBytes) {
      throw new DamagedPageException("payload length " + length + ", expected " + payloadBytes);
    }
    return header.getInt(76);
  }

  private static int headerCrc(ByteBuffer header) {
    CRC32C crc = new CRC32C();
    crc.update(header.duplicate().position(0).limit(HEADER_CRC_AT));
    return (int) crc.getValue();
  }
}
