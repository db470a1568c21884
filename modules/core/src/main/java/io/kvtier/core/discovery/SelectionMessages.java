package io.kvtier.core.discovery;

import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The texts of failed selections. Each says what was asked, what was found with each provider's
 * availability, and what to do, because the reader is someone at a terminal who did not write
 * the module path.
 */
record SelectionMessages(Class<?> spi, Optional<ProviderKind> kind) {

  String notFound(String name, List<ProviderReport> found) {
    return "no "
        + spi.getName()
        + " provider is named '"
        + name
        + "'"
        + setting(name)
        + ". "
        + found(found)
        + " Fix: put the module providing '"
        + name
        + "'"
        + artifact(name)
        + " on the module path, or choose one of: "
        + availableNames(found)
        + ".";
  }

  String unavailable(String name, String reason, List<ProviderReport> found) {
    return "the "
        + spi.getName()
        + " provider '"
        + name
        + "'"
        + setting(name)
        + " is unavailable: "
        + reason
        + ". "
        + found(found)
        + " Fix: act on the reason above,"
        + " or choose one of: "
        + availableNames(found)
        + ".";
  }

  String noneForAuto(List<String> order, List<ProviderReport> found) {
    String tried =
        order.isEmpty()
            ? "the auto order is empty"
            : order.stream().map(n -> n + " " + state(n, found)).collect(Collectors.joining(", "));
    String modules =
        order.stream().map(n -> "'" + n + "'" + artifact(n)).collect(Collectors.joining(", "));
    return "auto"
        + setting("auto")
        + " found no available "
        + spi.getName()
        + " in the order "
        + order
        + " ("
        + tried
        + "). "
        + found(found)
        + " Fix: put a module providing one of "
        + (modules.isEmpty() ? "the wanted names" : modules)
        + " on the module path, make one"
        + " available, or choose one of: "
        + availableNames(found)
        + ".";
  }

  private String setting(String value) {
    return kind.map(k -> " (" + k.configKey() + "=" + value + ")").orElse("");
  }

  private String artifact(String name) {
    return kind.flatMap(k -> k.knownArtifact(name)).map(a -> " (" + a + ")").orElse("");
  }

  private static String state(String name, List<ProviderReport> found) {
    return found.stream()
        .filter(r -> r.name().equals(name))
        .findFirst()
        .map(r -> r.status().label())
        .orElse("not on the module path");
  }

  // Testing providers (@TestingProvider) are named apart and never offered as the fix: they
  // wrap a real provider to check or break it, which is not what a failed start-up wants.
  private static String found(List<ProviderReport> found) {
    List<ProviderReport> real = found.stream().filter(r -> !r.testing()).toList();
    List<String> testing =
        found.stream().filter(ProviderReport::testing).map(ProviderReport::name).toList();
    String also =
        testing.isEmpty()
            ? ""
            : " Testing providers, for tests only: " + String.join(", ", testing) + ".";
    if (real.isEmpty()) {
      return "No provider of it is on the module path." + also;
    }
    return "Found: "
        + real.stream().map(ProviderReport::summary).collect(Collectors.joining("; "))
        + "."
        + also;
  }

  private static String availableNames(List<ProviderReport> found) {
    List<String> names =
        found.stream()
            .filter(r -> r.available() && !r.testing())
            .map(ProviderReport::name)
            .toList();
    return names.isEmpty() ? "(none is available)" : String.join(", ", names);
  }
}
