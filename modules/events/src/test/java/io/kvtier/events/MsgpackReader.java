package io.kvtier.events;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A msgpack decoder written from the format's specification for the tests, apart from the
 * encoder's library: arrays become lists, maps linked maps, every integer a {@code Long} (a
 * uint64 above {@code Long.MAX_VALUE} keeps its 64 bits, read it as unsigned), strings strings,
 * binaries byte arrays, nil null.
 */
final class MsgpackReader {
  private final ByteBuffer in;

  private MsgpackReader(byte[] bytes) {
    this.in = ByteBuffer.wrap(bytes);
  }

  /** Decodes one value that must fill {@code bytes}. */
  static Object decode(byte[] bytes) {
    MsgpackReader r = new MsgpackReader(bytes);
    Object v = r.value();
    if (r.in.hasRemaining()) {
      throw new IllegalArgumentException(r.in.remaining() + " bytes after the value");
    }
    return v;
  }

  private Object value() {
    int b = in.get() & 0xFF;
    if (b <= 0x7F) {
      return (long) b;
    } else if (b >= 0xE0) {
      return (long) (byte) b;
    } else if ((b & 0xE0) == 0xA0) {
      return string(b & 0x1F);
    } else if ((b & 0xF0) == 0x90) {
      return array(b & 0x0F);
    } else if ((b & 0xF0) == 0x80) {
      return map(b & 0x0F);
    }
    return switch (b) {
      case 0xC0 -> null;
      case 0xC2 -> false;
      case 0xC3 -> true;
      case 0xC4 -> bytes(in.get() & 0xFF);
      case 0xC5 -> bytes(in.getShort() & 0xFFFF);
      case 0xC6 -> bytes(in.getInt());
      case 0xCA -> (double) in.getFloat();
      case 0xCB -> in.getDouble();
      case 0xCC -> (long) (in.get() & 0xFF);
      case 0xCD -> (long) (in.getShort() & 0xFFFF);
      case 0xCE -> in.getInt() & 0xFFFF_FFFFL;
      case 0xCF -> in.getLong();
      case 0xD0 -> (long) in.get();
      case 0xD1 -> (long) in.getShort();
      case 0xD2 -> (long) in.getInt();
      case 0xD3 -> in.getLong();
      case 0xD9 -> string(in.get() & 0xFF);
      case 0xDA -> string(in.getShort() & 0xFFFF);
      case 0xDB -> string(in.getInt());
      case 0xDC -> array(in.getShort() & 0xFFFF);
      case 0xDD -> array(in.getInt());
      case 0xDE -> map(in.getShort() & 0xFFFF);
      case 0xDF -> map(in.getInt());
      default ->
          throw new IllegalArgumentException("msgpack type byte 0x" + Integer.toHexString(b));
    };
  }

  private String string(int n) {
    return new String(bytes(n), StandardCharsets.UTF_8);
  }

  private byte[] bytes(int n) {
    byte[] out = new byte[n];
    in.get(out);
    return out;
  }

  private List<Object> array(int n) {
    List<Object> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(value());
    }
    return out;
  }

  private Map<Object, Object> map(int n) {
    Map<Object, Object> out = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      out.put(value(), value());
    }
    return out;
  }

  /** For messages: the first bytes of a payload. */
  static String head(byte[] bytes) {
    return Arrays.toString(Arrays.copyOf(bytes, Math.min(16, bytes.length)));
  }
}
