package io.kvtier.backend.cuda;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;

/**
 * Where JCuda's JNI library is, found without loading any JCuda class: JCuda looks for it with
 * {@link System#loadLibrary} (so in {@code java.library.path}) and falls back to a {@code lib/}
 * resource on the class path, which a jar on the module path cannot serve. The build unpacks the
 * library into {@code backend-cuda/target/natives}.
 */
final class CudaNatives {

  /** The JCuda version whose natives the build unpacks; equal to jcuda.version in the pom. */
  static final String JCUDA_VERSION = "12.6.0";

  /** The only platform whose natives the build unpacks. */
  static final String PLATFORM = "linux-x86_64";

  private CudaNatives() {}

  /**
   * The name JCuda passes to {@link System#loadLibrary} for the driver binding.
   *
   * @return for example {@code JCudaDriver-12.6.0-linux-x86_64}
   */
  static String libraryName() {
    return "JCudaDriver-" + JCUDA_VERSION + "-" + PLATFORM;
  }

  /**
   * The file name of the driver binding.
   *
   * @return for example {@code libJCudaDriver-12.6.0-linux-x86_64.so}
   */
  static String fileName() {
    return System.mapLibraryName(libraryName());
  }

  /**
   * Whether this JVM runs on the platform whose natives are shipped.
   *
   * @return empty if it does, else why not
   */
  static Optional<String> unsupportedPlatform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (os.startsWith("linux") && (arch.equals("amd64") || arch.equals("x86_64"))) {
      return Optional.empty();
    }
    return Optional.of(
        "the cuda backend runs on "
            + PLATFORM
            + " only (it uses libcuda.so.1 and ships JCuda's "
            + PLATFORM
            + " natives); this JVM runs on os.name="
            + System.getProperty("os.name")
            + " os.arch="
            + System.getProperty("os.arch")
            + ": use kvtier.device=sim here");
  }

  /**
   * Looks for the driver binding in the directories of {@code java.library.path}, then as a
   * class path resource (JCuda's fallback).
   *
   * @param libraryPath the value of {@code java.library.path}
   * @return where it was found, or empty
   */
  static Optional<String> locate(String libraryPath) {
    if (libraryPath != null) {
      for (String dir : libraryPath.split(File.pathSeparator)) {
        if (!dir.isBlank()) {
          Path candidate = Path.of(dir).resolve(fileName());
          if (Files.isRegularFile(candidate)) {
            return Optional.of(candidate.toString());
          }
        }
      }
    }
    ClassLoader loader = ClassLoader.getSystemClassLoader();
    return Optional.ofNullable(loader.getResource("lib/" + fileName()))
        .map(url -> "class path resource " + url);
  }

  /**
   * Why JCuda would not find its library, and the fix.
   *
   * @param libraryPath the value of {@code java.library.path}
   * @return the reason
   */
  static String missingReason(String libraryPath) {
    return "JCuda's native library "
        + fileName()
        + " is not in java.library.path="
        + libraryPath
        + ": build the project (./mvnw install unpacks it into backend-cuda/target/natives) and"
        + " run java with -Djava.library.path=<kvtier>/backend-cuda/target/natives (bin/kvtier"
        + " does this)";
  }
}
