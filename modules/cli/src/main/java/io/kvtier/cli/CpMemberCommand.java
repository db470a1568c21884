package io.kvtier.cli;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvtier cp-member}: a plain Hazelcast member that is one of the CP members of the
 * {@code hazelcast} collective's cluster without being a rank, for groups of fewer than 3 ranks
 * in embedded mode (and as the building block of a standalone cluster for client mode).
 *
 * <p>It runs {@code HazelcastCpMemberMain} of the {@code io.kvtier.collective.hazelcast} module,
 * found at run time: the CLI depends on that module only at run time (as a provider found
 * through ServiceLoader), so it does not compile against Hazelcast's types and the command names
 * what is missing when the module is not on the path.
 */
@Command(
    name = "cp-member",
    mixinStandardHelpOptions = true,
    description = {
      "Runs a plain Hazelcast member that serves as a CP member of the hazelcast collective's"
          + " cluster without being a rank, until stopped (Ctrl-C, SIGTERM). Embedded-mode ranks"
          + " need 3 CP members (hazelcast.cp-member-count): with fewer than 3 rank processes,"
          + " start 3 - R of these with the ranks' own hazelcast.* settings.",
      "Example: kvtier cp-member hazelcast.cluster-name=sim1 hazelcast.port=5801",
      "Exit status: 2 on a bad setting (the keys are listed), 1 when the hazelcast module is"
          + " not on the module path."
    })
final class CpMemberCommand implements Callable<Integer> {
  /** The module and class that run the member. */
  static final String MODULE = "io.kvtier.collective.hazelcast";

  static final String MAIN = MODULE + ".HazelcastCpMemberMain";

  @Spec private CommandSpec spec;

  @Parameters(
      paramLabel = "hazelcast.KEY=VALUE",
      arity = "0..*",
      description =
          "Settings of"
              + " the hazelcast module, the same as the ranks' (cluster-name, members, port, port-count,"
              + " cp-member-count, timeouts); hazelcast.mode must stay embedded.")
  private List<String> settings = new ArrayList<>();

  @Override
  public Integer call() throws Exception {
    for (String s : settings) {
      int eq = s.indexOf('=');
      if (!s.startsWith("hazelcast.") || eq <= "hazelcast.".length()) {
        throw new ParameterException(
            spec.commandLine(),
            "setting '"
                + s
                + "' is not"
                + " hazelcast.KEY=VALUE: write for example hazelcast.port=5801");
      }
    }
    Method run =
        entryPoint()
            .orElseThrow(
                () ->
                    new IllegalStateException(
                        "the hazelcast"
                            + " module ("
                            + MODULE
                            + ", artifact kvtier-collective-hazelcast) is not on the module"
                            + " path: run bin/kvtier from a full build, or add its jar and Hazelcast's"));
    spec.commandLine().getOut().flush();
    try {
      return (Integer) run.invoke(null, (Object) settings.toArray(String[]::new));
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof Exception cause) {
        throw cause;
      }
      throw e;
    }
  }

  /**
   * {@code HazelcastCpMemberMain.run(String...)}: from the boot layer's module when it is on the
   * module path, else from the class path.
   */
  static Optional<Method> entryPoint() {
    Class<?> main;
    try {
      Optional<Module> module = ModuleLayer.boot().findModule(MODULE);
      if (module.isPresent()) {
        main = Class.forName(module.get(), MAIN);
        if (main == null) {
          return Optional.empty();
        }
      } else {
        main = Class.forName(MAIN, false, CpMemberCommand.class.getClassLoader());
      }
      return Optional.of(main.getMethod("run", String[].class));
    } catch (ClassNotFoundException | NoSuchMethodException | LinkageError e) {
      return Optional.empty();
    }
  }
}
