package io.kvtier.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * One in-process run of the {@code kvtier} command line, as the cli tests make it: the exit
 * status and everything written to standard output and standard error.
 *
 * @param status the exit status {@link KvTierCli#run} returned
 * @param out what the command printed to standard output
 * @param err what it printed to standard error
 */
record CliRun(int status, String out, String err) {

  /**
   * Runs the command line with {@code args}.
   *
   * @param args the arguments, as after {@code kvtier}
   * @return the status and the output
   */
  static CliRun run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int status = KvTierCli.run(new PrintWriter(out), new PrintWriter(err), args);
    return new CliRun(status, out.toString(), err.toString());
  }

  /**
   * The first line the command wrote to standard error: where the cli puts its one-line cause.
   *
   * @return that line, or an empty string when nothing was written
   */
  String firstErrLine() {
    return err.lines().findFirst().orElse("");
  }
}
