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
 * The {@code kvtier} command line and its exit statuses: 0 when the command did what it was
 * asked; 1 when a check failed (or a command failed while it ran); 2 when it could not start: a
 * usage error (an unknown subcommand or option, a value out of range) or an unusable input or
 * environment ({@link UnusableInputException}: a missing file, an unavailable provider).
 *
 * <p>Every error is short and comes first: {@code kvtier SUBCOMMAND: MESSAGE} on one line (the
 * option as the user spells it, its valid range or values), then, for a usage error, the line
 * {@code see `kvtier SUBCOMMAND --help`}; never the whole usage, which would scroll the message
 * away, and never a stack trace.
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
      ModelCommand.class,
      CommandLine.HelpCommand.class
    })
public final class KvTierCli implements Callable<Integer> {

  /** Exit status of a failed command: a check failed, or the command failed while it ran. */
  public static final int EXIT_FAILURE = 1;

  /** Exit status of a command that could not start: a usage error or an unusable input. */
  public static final int EXIT_USAGE = 2;

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
          commandLine.getErr().println(commandName(commandLine) + ": " + e.getMessage());
          commandLine.getErr().flush();
          return e instanceof UnusableInputException ? EXIT_USAGE : EXIT_FAILURE;
        });
    cli.setParameterExceptionHandler(KvTierCli::usageError);
    int status = cli.execute(args);
    out.flush();
    err.flush();
    return status;
  }

  /**
   * The one handler of every subcommand's usage errors: the message first, in the user's option
   * names, then picocli's "Did you mean" suggestions, if any, then where the usage is; the usage
   * itself (over a hundred lines for {@code simulate}) would push the message off the screen.
   */
  static int usageError(ParameterException e, String[] args) {
    CommandLine failed = e.getCommandLine();
    PrintWriter err = failed.getErr();
    String name = commandName(failed);
    err.println(name + ": " + e.getMessage());
    CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
    err.println("see `" + name + " --help`");
    err.flush();
    return EXIT_USAGE;
  }

  /** The command as the user typed it: {@code kvtier} or {@code kvtier simulate}. */
  private static String commandName(CommandLine commandLine) {
    return commandLine.getCommandSpec().qualifiedName();
  }

  /** Without a subcommand there is nothing to do: a usage error listing the subcommands. */
  @Override
  public Integer call() {
    throw new ParameterException(
        spec.commandLine(),
        "Missing subcommand: give one of "
            + String.join(", ", spec.subcommands().keySet())
            + " (kvtier simulate runs the simulator on its defaults)");
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
