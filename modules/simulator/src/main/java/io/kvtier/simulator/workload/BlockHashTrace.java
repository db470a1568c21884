package io.kvtier.simulator.workload;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A block-hash trace (the Mooncake trace format): one request per line, {@code {"timestamp": ms,
 * "input_length": n, "output_length": m, "hash_ids": [..]}}, where each hash id names a block of
 * {@value #BLOCK_TOKENS} prompt tokens and equal ids mean equal blocks. A prompt is rebuilt by
 * expanding each id into {@value #BLOCK_TOKENS} pseudo-tokens drawn from a {@link SplitMix64}
 * seeded by the id, the last block truncated to {@code input_length}; so equal id prefixes give
 * equal token prefixes. The trace holds only the ids; prompts are expanded as requests are read.
 * Spec {@code mooncake:<path>}.
 */
public final class BlockHashTrace implements Workload {

  /** Tokens per hash block. */
  public static final int BLOCK_TOKENS = 512;

  /** The spec name. */
  public static final String NAME = "mooncake";

  private final String source;
  private final int vocab;
  private final long[] timestamps;
  private final int[] inputLengths;
  private final int[] outputLengths;
  private final long[] hashIds;
  // hashOffsets[i] is where request i's ids start in hashIds
  private final int[] hashOffsets;

  private BlockHashTrace(Builder b) {
    this.source = b.source;
    this.vocab = b.vocab;
    this.timestamps = Arrays.copyOf(b.timestamps, b.size);
    this.inputLengths = Arrays.copyOf(b.inputLengths, b.size);
    this.outputLengths = Arrays.copyOf(b.outputLengths, b.size);
    this.hashIds = Arrays.copyOf(b.hashIds, b.idCount);
    this.hashOffsets = Arrays.copyOf(b.hashOffsets, b.size + 1);
  }

  /**
   * A builder of a trace in memory, for tests and for writing sample files.
   *
   * @param source the name {@link #spec()} reports, usually the file it will be written to
   * @param vocab the vocabulary size of the expanded tokens, at least 1
   * @return the builder
   */
  public static Builder builder(String source, int vocab) {
    return new Builder(source, vocab);
  }

  /**
   * Reads a trace file with a 32000-token vocabulary.
   *
   * @param file the file
   * @return the trace
   * @throws TraceFormatException naming the line of the first problem
   */
  public static BlockHashTrace read(Path file) {
    return read(file, 32000);
  }

  /**
   * Reads a trace file.
   *
   * @param file the file
   * @param vocab the vocabulary size of the expanded tokens, at least 1
   * @return the trace
   * @throws TraceFormatException naming the line of the first problem
   */
  public static BlockHashTrace read(Path file, int vocab) {
    Objects.requireNonNull(file, "file");
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      return read(in, file.toString(), vocab);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read trace " + file + ": " + e.getMessage(), e);
    }
  }

  /**
   * Parses a trace from text.
   *
   * @param text the lines
   * @param source the name to quote in error messages
   * @param vocab the vocabulary size of the expanded tokens, at least 1
   * @return the trace
   * @throws TraceFormatException naming the line of the first problem
   */
  public static BlockHashTrace parse(String text, String source, int vocab) {
    try {
      return read(new BufferedReader(new StringReader(text)), source, vocab);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static BlockHashTrace read(BufferedReader in, String source, int vocab)
      throws IOException {
    Builder b = builder(source, vocab);
    long lineNumber = 0;
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      lineNumber++;
      if (line.isBlank()) {
        throw new TraceFormatException(
            source, lineNumber, 1, "line is blank: every line must hold one request object");
      }
      BlockHashLineParser p = BlockHashLineParser.parse(source, lineNumber, line);
      try {
        b.add(p.timestamp, p.inputLength, p.outputLength, p.hashIds);
      } catch (IllegalArgumentException e) {
        throw new TraceFormatException(source, lineNumber, 1, e.getMessage());
      }
    }
    return b.build();
  }

  /**
   * The tokens of the first {@code count} positions of one block.
   *
   * @param hashId the block's id, the seed of its tokens
   * @param count how many tokens, 0 to {@value #BLOCK_TOKENS}
   * @param vocab the vocabulary size, at least 1
   * @return the tokens
   */
  public static int[] blockTokens(long hashId, int count, int vocab) {
    Objects.checkIndex(count, BLOCK_TOKENS + 1);
    return new SplitMix64(hashId).tokens(count, vocab);
  }

  /**
   * The number of requests.
   *
   * @return the line count
   */
  public int size() {
    return timestamps.length;
  }

  /**
   * One request's hash ids.
   *
   * @param request the index, in {@code [0, size())}
   * @return a copy of its ids
   */
  public long[] hashIds(int request) {
    Objects.checkIndex(request, size());
    return Arrays.copyOfRange(hashIds, hashOffsets[request], hashOffsets[request + 1]);
  }

  /**
   * One request's prompt, expanded from its hash ids.
   *
   * @param request the index, in {@code [0, size())}
   * @return a new array of {@code input_length} tokens
   */
  public int[] prompt(int request) {
    Objects.checkIndex(request, size());
    int[] prompt = new int[inputLengths[request]];
    int at = 0;
    for (int k = hashOffsets[request]; k < hashOffsets[request + 1]; k++) {
      int n = Math.min(BLOCK_TOKENS, prompt.length - at);
      new SplitMix64(hashIds[k]).fillTokens(prompt, at, n, vocab);
      at += n;
    }
    return prompt;
  }

  @Override
  public String spec() {
    return NAME + ":" + source;
  }

  /** The requests: arrival {@code timestamp}, output budget {@code output_length}, no context. */
  @Override
  public Stream<Request> requests() {
    return RequestStreams.sequential(
        size(), i -> new Request(timestamps[i], prompt(i), outputLengths[i], Optional.empty()));
  }

  /**
   * Writes the trace in the format Mooncake publishes ({@code json.dumps} spacing).
   *
   * @param file the file, replaced
   */
  public void write(Path file) {
    Objects.requireNonNull(file, "file");
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < size(); i++) {
      s.append("{\"timestamp\": ")
          .append(timestamps[i])
          .append(", \"input_length\": ")
          .append(inputLengths[i])
          .append(", \"output_length\": ")
          .append(outputLengths[i])
          .append(", \"hash_ids\": [");
      for (int k = hashOffsets[i]; k < hashOffsets[i + 1]; k++) {
        s.append(k == hashOffsets[i] ? "" : ", ").append(hashIds[k]);
      }
      s.append("]}\n");
    }
    try {
      Files.writeString(file, s, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write trace " + file + ": " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return "BlockHashTrace[" + source + ", requests=" + size() + "]";
  }

  /** Appends requests to a new {@link BlockHashTrace}, checking each; not thread-safe. */
  public static final class Builder {

    private final String source;
    private final int vocab;
    private int size;
    private int idCount;
    private long[] timestamps = new long[64];
    private int[] inputLengths = new int[64];
    private int[] outputLengths = new int[64];
    private long[] hashIds = new long[256];
    private int[] hashOffsets = new int[65];

    private Builder(String source, int vocab) {
      this.source = Objects.requireNonNull(source, "source");
      Check.atLeast("vocab", vocab, 1);
      this.vocab = vocab;
    }

    /**
     * Appends a request.
     *
     * @param timestampMillis its arrival, at least 0 and not before the previous request's
     * @param inputLength its prompt length, at least 1
     * @param outputLength its output budget, at least 0
     * @param ids its block ids, exactly {@code ceil(inputLength / 512)} of them
     * @return this builder
     */
    public Builder add(long timestampMillis, long inputLength, long outputLength, long... ids) {
      Objects.requireNonNull(ids, "ids");
      long previous = size == 0 ? 0 : timestamps[size - 1];
      if (timestampMillis < previous) {
        throw new IllegalArgumentException(
            "timestamp %d is before the previous request's %d: sort the trace by timestamp"
                .formatted(timestampMillis, previous));
      }
      if (inputLength < 1 || inputLength > Check.MAX_PROMPT) {
        throw new IllegalArgumentException(
            "input_length=" + inputLength + " must be between 1 and " + Check.MAX_PROMPT);
      }
      if (outputLength < 0 || outputLength > Integer.MAX_VALUE) {
        throw new IllegalArgumentException(
            "output_length=" + outputLength + " must be between 0 and " + Integer.MAX_VALUE);
      }
      long blocks = (inputLength + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
      if (ids.length != blocks) {
        throw new IllegalArgumentException(
            "input_length=%d needs %d hash ids of %d-token blocks but the request has %d"
                .formatted(inputLength, blocks, BLOCK_TOKENS, ids.length));
      }
      if (size == timestamps.length) {
        timestamps = Arrays.copyOf(timestamps, 2 * size);
        inputLengths = Arrays.copyOf(inputLengths, 2 * size);
        outputLengths = Arrays.copyOf(outputLengths, 2 * size);
        hashOffsets = Arrays.copyOf(hashOffsets, 2 * size + 1);
      }
      if (idCount + ids.length > hashIds.length) {
        hashIds = Arrays.copyOf(hashIds, Math.max(idCount + ids.length, 2 * hashIds.length));
      }
      System.arraycopy(ids, 0, hashIds, idCount, ids.length);
      idCount += ids.length;
      timestamps[size] = timestampMillis;
      inputLengths[size] = (int) inputLength;
      outputLengths[size] = (int) outputLength;
      hashOffsets[++size] = idCount;
      return this;
    }

    /**
     * The trace of the requests added so far.
     *
     * @return the trace
     */
    public BlockHashTrace build() {
      return new BlockHashTrace(this);
    }
  }
}
