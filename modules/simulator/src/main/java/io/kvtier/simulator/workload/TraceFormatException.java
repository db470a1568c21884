package io.kvtier.simulator.workload;

import java.util.Objects;

/**
 * A trace file does not follow its format. The message names the file, the line (from 1) and the
 * column (from 1) of the first problem, what was found there and what was expected.
 */
public final class TraceFormatException extends IllegalArgumentException {

  private static final long serialVersionUID = 1L;

  private final String source;
  private final long line;
  private final int column;

  /**
   * An exception for a problem at one place of a trace.
   *
   * @param source the file or stream the trace came from
   * @param line the line number, from 1
   * @param column the column, from 1 (characters, counted in bytes for ASCII input)
   * @param problem what was wrong and what was expected
   */
  public TraceFormatException(String source, long line, int column, String problem) {
    super(
        Objects.requireNonNull(source, "source")
            + ":"
            + line
            + ":"
            + column
            + ": "
            + Objects.requireNonNull(problem, "problem"));
    this.source = source;
    this.line = line;
    this.column = column;
  }

  /**
   * The file or stream the trace came from.
   *
   * @return the source name
   */
  public String source() {
    return source;
  }

  /**
   * The line of the problem.
   *
   * @return the line number, from 1
   */
  public long line() {
    return line;
  }

  /**
   * The column of the problem.
   *
   * @return the column, from 1
   */
  public int column() {
    return column;
  }
}
