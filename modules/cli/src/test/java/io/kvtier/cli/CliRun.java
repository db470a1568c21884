package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

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
   * Runs {@code kvtier serve} with {@code args}.
   *
   * @param args the arguments, as after {@code kvtier serve}
   * @return the status and the output
   */
  static CliRun serve(String... args) {
    String[] all = new String[args.length + 1];
    all[0] = "serve";
    System.arraycopy(args, 0, all, 1, args.length);
    return run(all);
  }

  /**
   * Asserts that {@code kvtier serve} refused its options as the cli refuses a usage error: exit
   * status 2 and one line on standard error, {@code kvtier serve: MESSAGE... see kvtier serve
   * --help}.
   *
   * @param run the run
   * @param message what the line must say first
   */
  static void assertServeUsage(CliRun run, String message) {
    assertThat(run.status()).as(run.err()).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(run.firstErrLine())
        .startsWith("kvtier serve: " + message)
        .endsWith("see kvtier serve --help");
    assertThat(run.err().lines().count()).as(run.err()).isEqualTo(1);
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
