package io.kvtier.simulator.workload;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;

/**
 * The token-trace file format of WORKLOADS.md: JSON Lines, one request per line, its prompt as a
 * JSON array of decimal token ids. The writer emits exactly the canonical form ({@code [1,2,3]\n}:
 * no spaces, every line ending in {@code \n}), whose SHA-256 the fixed traces are pinned to. The
 * reader also accepts JSON whitespace (Python's {@code json.dumps} writes {@code [1, 2, 3]}), CRLF
 * line ends and a missing final newline; anything else is a {@link TraceFormatException} naming
 * the line.
 */
public final class TraceJsonl {

  private TraceJsonl() {}

  /**
   * Writes a trace in the canonical form.
   *
   * @param trace the trace
   * @param out the destination; flushed, not closed
   * @throws IOException if writing fails
   */
  public static void write(Trace trace, OutputStream out) throws IOException {
    Objects.requireNonNull(trace, "trace");
    Objects.requireNonNull(out, "out");
    byte[] buf = new byte[1 << 16];
    int n = 0;
    for (int r = 0; r < trace.size(); r++) {
      int[] prompt = trace.prompt(r);
      // the longest line piece one token adds: 10 digits and a separator; flush before it could
      // overflow the buffer
      for (int i = 0; i < prompt.length; i++) {
        if (n > buf.length - 16) {
          out.write(buf, 0, n);
          n = 0;
        }
        buf[n++] = (byte) (i == 0 ? '[' : ',');
        n = writeDecimal(prompt[i], buf, n);
      }
      buf[n++] = ']';
      buf[n++] = '\n';
    }
    out.write(buf, 0, n);
    out.flush();
  }

  /**
   * Writes a trace in the canonical form to a file, replacing it.
   *
   * @param trace the trace
   * @param file the file
   */
  public static void write(Trace trace, Path file) {
    Objects.requireNonNull(file, "file");
    try (OutputStream out = Files.newOutputStream(file)) {
      write(trace, out);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write trace " + file + ": " + e.getMessage(), e);
    }
  }

  /**
   * The canonical form of a trace as bytes.
   *
   * @param trace the trace
   * @return the file contents
   */
  public static byte[] toBytes(Trace trace) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      write(trace, out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  /**
   * Reads a trace file.
   *
   * @param file the file
   * @return the trace
   * @throws TraceFormatException if the file does not follow the format
   */
  public static Trace read(Path file) {
    Objects.requireNonNull(file, "file");
    byte[] content;
    try {
      content = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read trace " + file + ": " + e.getMessage(), e);
    }
    return read(content, file.toString());
  }

  /**
   * Parses a trace from the contents of a file.
   *
   * @param content the bytes, ASCII
   * @param source the name to quote in error messages
   * @return the trace
   * @throws TraceFormatException if the contents do not follow the format
   */
  public static Trace read(byte[] content, String source) {
    Objects.requireNonNull(content, "content");
    Objects.requireNonNull(source, "source");
    return new Parser(content, source).parse();
  }

  private static int writeDecimal(int value, byte[] buf, int at) {
    if (value < 0) {
      throw new IllegalArgumentException("token id " + value + " is negative: cannot write it");
    }
    int digits = 1;
    for (int v = value; v >= 10; v /= 10) {
      digits++;
    }
    int end = at + digits;
    int v = value;
    for (int i = end - 1; i >= at; i--) {
      buf[i] = (byte) ('0' + v % 10);
      v /= 10;
    }
    return end;
  }

  /** A single pass over the bytes; positions are tracked for the error messages. */
  private static final class Parser {

    private final byte[] in;
    private final String source;
    private int pos;
    private long line = 1;
    private int lineStart;
    private int[] prompt = new int[4096];

    Parser(byte[] in, String source) {
      this.in = in;
      this.source = source;
    }

    Trace parse() {
      // each token takes at least two bytes ("1,"), which bounds the token count from above
      Trace.Builder trace = Trace.builder(0, in.length / 2 + 1);
      while (pos < in.length) {
        int length = parseLine();
        trace.add(prompt, 0, length);
        line++;
        lineStart = pos;
      }
      return trace.build();
    }

    /** Parses one line including its newline; returns the prompt length. */
    private int parseLine() {
      skipBlanks();
      if (pos >= in.length || in[pos] == '\n') {
        throw error("line is blank: every line must hold a JSON array of token ids, e.g. [1,2,3]");
      }
      expect('[', "a line must start with '['");
      skipBlanks();
      int length = 0;
      if (peek() == ']') {
        throw error("empty array: every prompt needs at least one token id");
      }
      while (true) {
        skipBlanks();
        int token = parseToken();
        if (length == prompt.length) {
          prompt = Arrays.copyOf(prompt, 2 * length);
        }
        prompt[length++] = token;
        skipBlanks();
        int c = peek();
        if (c == ',') {
          pos++;
        } else if (c == ']') {
          pos++;
          break;
        } else {
          throw error("expected ',' or ']' after a token id but found " + describe(c));
        }
      }
      skipBlanks();
      if (pos < in.length) {
        expect('\n', "expected the end of the line after ']'");
      }
      return length;
    }

    private int parseToken() {
      int c = peek();
      if (c == '-') {
        throw error("negative token id: token ids must be >= 0");
      }
      if (c < '0' || c > '9') {
        throw error("expected a token id (a decimal integer) but found " + describe(c));
      }
      int start = pos;
      long value = 0;
      while (pos < in.length && in[pos] >= '0' && in[pos] <= '9') {
        value = value * 10 + (in[pos] - '0');
        if (value > Integer.MAX_VALUE) {
          throw error("token id is larger than " + Integer.MAX_VALUE);
        }
        pos++;
      }
      if (in[start] == '0' && pos - start > 1) {
        pos = start;
        throw error("token id has a leading zero, which JSON does not allow");
      }
      int next = peek();
      if (next == '.' || next == 'e' || next == 'E') {
        throw error("token id is not an integer");
      }
      return (int) value;
    }

    private void skipBlanks() {
      while (pos < in.length && (in[pos] == ' ' || in[pos] == '\t' || in[pos] == '\r')) {
        pos++;
      }
    }

    private int peek() {
      return pos < in.length ? in[pos] & 0xFF : -1;
    }

    private void expect(char c, String problem) {
      if (peek() != c) {
        throw error(problem + " but found " + describe(peek()));
      }
      pos++;
    }

    private static String describe(int c) {
      if (c < 0) {
        return "the end of the file";
      }
      if (c == '\n') {
        return "the end of the line";
      }
      return c >= 0x20 && c < 0x7F ? "'" + (char) c + "'" : "byte 0x" + Integer.toHexString(c);
    }

    private TraceFormatException error(String problem) {
      return new TraceFormatException(source, line, pos - lineStart + 1, problem);
    }
  }
}
