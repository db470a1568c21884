package io.kvtier.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kvtier backends}: lists the providers of every SPI found on the module path. */
@Command(
    name = "backends",
    mixinStandardHelpOptions = true,
    description = {
      "Lists, for each SPI (device, host, collective, store), every provider found on the module"
          + " path: its name, module and class, and whether it is available here and why.",
      "Testing providers (@TestingProvider: the checking wrappers such as the device"
          + " `asserting` that `simulate --device asserting` uses) are left out unless --testing"
          + " asks for them.",
      "Exit status: 0, or 1 when discovery of an SPI failed (two providers with one name, a"
          + " provider class without @ProviderName)."
    })
final class BackendsCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Option(names = "--json", description = "Print JSON instead of a table.")
  private boolean json;

  @Option(names = "--testing", description = "Also list the testing providers, such as asserting.")
  private boolean testing;

  @Override
  public Integer call() {
    List<BackendListing> listings = BackendListing.discover(testing);
    PrintWriter out = spec.commandLine().getOut();
    out.print(json ? BackendListing.toJson(listings) : BackendListing.toText(listings));
    out.flush();
    return listings.stream().anyMatch(l -> l.error().isPresent()) ? 1 : 0;
  }
}
