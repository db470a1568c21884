package io.kvtier.cli.report;

import io.kvtier.simulator.SimulationProgress;
import java.io.Console;
import java.io.PrintStream;

/**
 * A one-line progress bar of a simulation's ticks on a terminal's standard error; nothing at all
 * when standard error is not a terminal (piped or redirected output stays clean).
 *
 * <p>The simulator reports every tick, thousands per second, so the bar redraws only at each
 * hundredth of the input ticks: the terminal, not the simulation, would otherwise set the pace.
 * Once the input ticks are done the run drains for as long as its requests need, which is not
 * known in advance: the bar stays full and counts on.
 */
public final class Progress implements SimulationProgress {
  private static final int WIDTH = 30;
  private final PrintStream err;
  private final String label;
  private int drawn;

  /**
   * A bar that draws on {@code err}.
   *
   * @param err where to draw, or null to draw nothing
   * @param label what is counted, such as "ticks"
   */
  Progress(PrintStream err, String label) {
    this.err = err;
    this.label = label;
  }

  /**
   * A bar on {@code System.err} if the JVM runs on a terminal, else a bar that draws nothing.
   *
   * @param label what is counted, such as "ticks"
   * @return the bar
   */
  public static Progress onTerminal(String label) {
    Console console = System.console();
    boolean terminal = console != null && console.isTerminal();
    return new Progress(terminal ? System.err : null, label);
  }

  /**
   * Draws the bar after {@code done} of {@code total} steps, if it moved by a hundredth.
   *
   * @param done steps completed; past {@code total} while the run drains
   * @param total the steps expected
   */
  @Override
  public void ticks(long done, long total) {
    if (err == null || total <= 0 || (done % Math.max(1, total / 100) != 0 && done != total)) {
      return;
    }
    long filled = WIDTH * Math.min(done, total) / total;
    String text =
        "["
            + "#".repeat((int) filled)
            + " ".repeat(WIDTH - (int) filled)
            + "] "
            + (done <= total
                ? done + "/" + total + " " + label
                : done + " " + label + " (draining after " + total + ")");
    err.print("\r" + text + " ".repeat(Math.max(0, drawn - text.length())));
    err.flush();
    drawn = text.length();
  }

  /** Clears the bar's line, if one was drawn. */
  public void done() {
    if (err != null && drawn > 0) {
      err.print("\r" + " ".repeat(drawn) + "\r");
      err.flush();
      drawn = 0;
    }
  }
}
