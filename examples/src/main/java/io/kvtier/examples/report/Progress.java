package io.kvtier.examples.report;

import java.io.Console;
import java.io.PrintStream;

/**
 * A one-line progress bar on a terminal's standard error, for the runs of a report; nothing at
 * all when standard error is not a terminal (piped or redirected output stays clean).
 */
public final class Progress {
  private static final int WIDTH = 30;
  private final PrintStream err;
  private final int total;
  private final String label;

  private Progress(PrintStream err, int total, String label) {
    this.err = err;
    this.total = total;
    this.label = label;
  }

  /**
   * A bar on {@code System.err} if the JVM runs on a terminal, else a bar that draws nothing.
   *
   * @param total the steps
   * @param label what a step is, such as "runs"
   * @return the bar
   */
  public static Progress onTerminal(int total, String label) {
    Console console = System.console();
    boolean terminal = console != null && console.isTerminal();
    return new Progress(terminal ? System.err : null, total, label);
  }

  /**
   * Draws the bar after {@code done} steps.
   *
   * @param done steps completed
   */
  public void show(int done) {
    if (err == null || total <= 0) {
      return;
    }
    int filled = (int) ((long) WIDTH * Math.min(done, total) / total);
    err.print("\r[" + "#".repeat(filled) + " ".repeat(WIDTH - filled) + "] " + done + "/" + total
        + " " + label);
    err.flush();
  }

  /** Ends the bar's line. */
  public void done() {
    if (err != null && total > 0) {
      err.print("\r" + " ".repeat(WIDTH + 16 + label.length()) + "\r");
      err.flush();
    }
  }
}
