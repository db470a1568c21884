package io.kvtier.cli;

import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.util.Objects;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The {@code kvtier} command line. Usage errors (an unknown subcommand or option) print a short
 * message and the usage, and exit with status 2; a failure of a command prints its message, not
 * a stack trace, and exits with status 1.
 */
@Command(
    name = "kvtier",
    mixinStandardHelpOptions = true,
    versionProvider = KvTierCli.Version.class,
    description = "kvtier: a hierarchical KV-cache engine for LLM serving.",
    subcommands = {
      BackendsCommand.class,
      ServeCommand.class,
      RouteCommand.class,
      SimulateCommand.class,
      ReplayCommand.class,
      CpMemberCommand.class,
      CommandLine.HelpCommand.class
    })
public final class KvTierCli implements Callable<Integer> {

  /** Exit status of a failed command. */
  public static final int EXIT_FAILURE = 1;

  @Spec private CommandSpec spec;

  /** Creates the top-level command; picocli fills its fields. */
  public KvTierCli() {}

  /**
   * Runs the command line and exits the JVM with its status.
   *
   * @param args the arguments
   */
  public static void main(String[] args) {
    Charset charset = Charset.defaultCharset();
    int status =
        run(
            new PrintWriter(System.out, true, charset),
            new PrintWriter(System.err, true, charset),
            args);
    System.exit(status);
  }

  /**
   * Runs the command line without exiting, for tests and for embedding.
   *
   * @param out where the output goes
   * @param err where usage errors and failures go
   * @param args the arguments
   * @return the exit status: 0 on success, 1 on a failed command, 2 on a usage error
   */
  public static int run(PrintWriter out, PrintWriter err, String... args) {
    Objects.requireNonNull(out, "out");
    Objects.requireNonNull(err, "err");
    Objects.requireNonNull(args, "args");
    CommandLine cli = new CommandLine(new KvTierCli());
    cli.setOut(out);
    cli.setErr(err);
    cli.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> {
          // The message of every kvtier exception says what to do; a stack trace would hide it.
          commandLine
              .getErr()
              .println("kvtier " + commandLine.getCommandName() + ": " + e.getMessage());
          commandLine.getErr().flush();
          return EXIT_FAILURE;
        });
    // picocli's default handler prints only "Did you mean ...?" when a suggestion exists; a
    // usage error should always show the usage as well.
    cli.setParameterExceptionHandler(
        (e, ignored) -> {
          CommandLine failed = e.getCommandLine();
          failed.getErr().println(e.getMessage());
          CommandLine.UnmatchedArgumentException.printSuggestions(e, failed.getErr());
          failed.usage(failed.getErr());
          return failed.getCommandSpec().exitCodeOnInvalidInput();
        });
    int status = cli.execute(args);
    out.flush();
    err.flush();
    return status;
  }

  /** Without a subcommand there is nothing to do: a usage error listing the subcommands. */
  @Override
  public Integer call() {
    throw new ParameterException(spec.commandLine(), "Missing subcommand");
  }

  /** The version of the {@code io.kvtier.cli} module, as Maven built it. */
  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() {
      String version =
          KvTierCli.class.getModule().getDescriptor() == null
              ? "unknown"
              : KvTierCli.class.getModule().getDescriptor().rawVersion().orElse("unknown");
      return new String[] {"kvtier " + version, "Java " + Runtime.version()};
    }
  }
}
