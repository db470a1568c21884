package io.kvtier.collective.mpi.internal;

import io.kvtier.spi.Availability;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Finds Open MPI's C library without initializing MPI, and says whether the process was started
 * by a launcher. Never throws: every failure becomes the reason of an unavailable result. The
 * library is probed once per JVM (loading it is process-wide anyway).
 *
 * @param library the loaded library, when found
 * @param availability what the provider reports
 */
public record MpiProbe(Optional<MpiLibrary> library, Availability availability) {

  /** The module that needs native access, as the JVM option names it. */
  public static final String MODULE = "io.kvtier.collective.mpi";

  /** Validates the fields. */
  public MpiProbe {
    Objects.requireNonNull(library, "library");
    Objects.requireNonNull(availability, "availability");
  }

  private static final class Holder {
    static final MpiProbe RESULT = probe(MpiOpenMpiAbi.LIBRARY_NAMES, System.getenv());
  }

  /**
   * The probe of this JVM, run on first use.
   *
   * @return the cached result
   */
  public static MpiProbe get() {
    return Holder.RESULT;
  }

  /**
   * Probes the given library names in order.
   *
   * @param names library names for {@code dlopen}
   * @param environment the process environment, for the launcher's variables
   * @return the result; never throws
   */
  static MpiProbe probe(List<String> names, Map<String, String> environment) {
    try {
      List<String> problems = new ArrayList<>();
      for (String name : names) {
        try {
          MpiLibrary library = new MpiLibrary(name);
          return new MpiProbe(
              Optional.of(library), Availability.available(describe(library, environment)));
        } catch (IllegalArgumentException notFound) {
          problems.add(name + ": " + notFound.getMessage());
        } catch (MpiAbiMismatchException mismatch) {
          return unavailable(mismatch.getMessage());
        } catch (IllegalCallerException denied) {
          return unavailable(
              "native access to "
                  + name
                  + " was denied ("
                  + denied.getMessage()
                  + "): start java with --enable-native-access="
                  + MODULE);
        }
      }
      return unavailable(
          "Open MPI's C library was not found (tried "
              + String.join(", ", names)
              + " on the dynamic loader's path: "
              + String.join("; ", problems)
              + "): install it with `apt-get install "
              + MpiOpenMpiAbi.PACKAGES
              + "` (Debian,"
              + " Ubuntu), or put the lib directory of an Open MPI 4 installation on"
              + " LD_LIBRARY_PATH");
    } catch (Throwable t) {
      return unavailable("probing Open MPI failed: " + t);
    }
  }

  private static MpiProbe unavailable(String reason) {
    return new MpiProbe(Optional.empty(), Availability.unavailable(reason));
  }

  private static String describe(MpiLibrary library, Map<String, String> environment) {
    StringBuilder detail = new StringBuilder();
    detail.append(library.libraryVersion()).append(" (").append(library.name()).append(")");
    MpiLaunch launch = MpiLaunch.from(environment);
    detail.append(launch.launched() ? "; " : "; warning: ").append(launch.describe());
    if (!MpiProbe.class.getModule().isNativeAccessEnabled()) {
      detail
          .append("; warning: native access is not enabled for ")
          .append(MODULE)
          .append(
              ", so the JVM warns on the first downcall and will refuse it under"
                  + " --illegal-native-access=deny: start java with --enable-native-access=")
          .append(MODULE);
    }
    return detail.toString();
  }
}
