package io.kvtier.cli;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.Availability;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvTierProvider;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * What {@code kvtier simulate} checks before its first tick, so that a run that cannot end well
 * does not start: the providers it names, and the files it will write.
 */
final class SimulateInputs {
  private SimulateInputs() {}

  /**
   * Checks that the device provider and the L3 store are on the module path and available.
   *
   * @param device {@code --device}
   * @param store {@code --l3}, {@code none} for no store
   * @throws IllegalArgumentException for a name no provider has (a usage error: the message
   *     lists the names found)
   * @throws UnusableInputException for a provider that is found but unavailable here
   */
  static void checkProviders(String device, String store) {
    check("--device", DeviceMemoryProvider.class, device);
    if (!store.equals("none")) {
      check("--l3", KvStoreProvider.class, store);
    }
  }

  private static <P extends KvTierProvider> void check(String option, Class<P> spi, String name) {
    P provider;
    try {
      provider = Providers.named(spi, name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(option + "=" + name + ": " + e.getMessage(), e);
    }
    Availability availability = provider.availability();
    if (!availability.available()) {
      throw new UnusableInputException(
          option + " " + name + " is unavailable here: " + availability.reason());
    }
  }

  /**
   * Checks, before the run, that an output file can be written: its directory is created if
   * missing (the run says so), and the file is opened for writing once (and removed again if
   * this check created it).
   *
   * @param option {@code --json}, {@code --csv} or {@code --report}
   * @param file the path, or null if the option is absent
   * @return a note for the summary if the directory was created, else null
   * @throws UnusableInputException if the path cannot be written, saying why
   */
  static String checkOutput(String option, Path file) {
    if (file == null) {
      return null;
    }
    if (Files.isDirectory(file)) {
      throw new UnusableInputException(
          option
              + " "
              + file
              + " is a directory: give a file path, for example "
              + file
              + "/result"
              + switch (option) {
                case "--report" -> ".html";
                case "--csv" -> ".csv";
                default -> ".json";
              });
    }
    Path parent = file.toAbsolutePath().getParent();
    String note = null;
    if (parent != null && !Files.exists(parent)) {
      try {
        Files.createDirectories(parent);
      } catch (IOException e) {
        throw new UnusableInputException(
            option
                + " "
                + file
                + ": cannot create its directory "
                + parent
                + " ("
                + reason(e)
                + "): give a path in a directory you can write",
            e);
      }
      note = "created the directory " + parent + " for " + option;
    } else if (parent != null && !Files.isDirectory(parent)) {
      throw new UnusableInputException(
          option + " " + file + ": " + parent + " is not a directory: give another path");
    }
    boolean existed = Files.exists(file);
    try (OutputStream o =
        Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
      // Opened only to learn that it can be: the run writes it at the end.
    } catch (IOException e) {
      throw new UnusableInputException(
          option + " " + file + " cannot be written (" + reason(e) + "): give a path you can write",
          e);
    }
    if (!existed) {
      try {
        Files.deleteIfExists(file);
      } catch (IOException e) {
        // The run overwrites it anyway.
      }
    }
    return note;
  }

  private static String reason(IOException e) {
    return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
  }
}
