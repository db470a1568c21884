package io.kvtier.backend.cuda;

import io.kvtier.spi.Availability;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The availability probe of the CUDA providers. It loads the driver library and calls {@code
 * cuInit}, {@code cuDriverGetVersion}, {@code cuDeviceGetCount} and {@code cuDeviceGetName}
 * through {@code java.lang.foreign}, and references no JCuda type: JCuda's native code loads
 * when a pool is opened, never to answer "is there a GPU".
 *
 * <p>The library stays loaded (global arena) once found: the driver starts threads in {@code
 * cuInit}, and unloading it under them is not safe, while JCuda loads it again anyway.
 */
final class CudaDriverProbe {

  /** The driver library the NVIDIA driver installs. */
  static final String DRIVER_LIBRARY = "libcuda.so.1";

  /** CUDA 12.0 in the encoding of cuDriverGetVersion: JCuda 12.6 binds the CUDA 12 API. */
  static final int MIN_DRIVER_VERSION = 12_000;

  // The CUresult codes whose reason the probe explains; the others are named by the driver.
  static final int CUDA_SUCCESS = 0;
  static final int CUDA_ERROR_STUB_LIBRARY = 34;
  static final int CUDA_ERROR_INSUFFICIENT_DRIVER = 35;
  static final int CUDA_ERROR_NO_DEVICE = 100;

  private static final FunctionDescriptor INT_OF_INT =
      FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
  private static final FunctionDescriptor INT_OF_POINTER =
      FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS);

  /** The probe of the real driver, run once per JVM on first use. */
  private static final class Cached {
    static final Availability RESULT =
        probe(DRIVER_LIBRARY, System.getProperty("java.library.path"));
  }

  private CudaDriverProbe() {}

  /**
   * The availability of the CUDA backend on this machine, probed once per JVM.
   *
   * @return available with the GPU's name, or unavailable with the reason and the fix
   */
  static Availability cached() {
    return Cached.RESULT;
  }

  /**
   * Throws unless the backend is available.
   *
   * @param pool {@code "device"} or {@code "host"}, for the message
   * @param availability the probe's answer
   * @throws IllegalStateException with the probe's reason
   */
  static void requireAvailable(String pool, Availability availability) {
    if (!availability.available()) {
      throw new IllegalStateException(
          "the cuda " + pool + " provider is unavailable: " + availability.reason());
    }
  }

  /**
   * Probes a driver library. Never throws.
   *
   * @param library the library to load, {@value #DRIVER_LIBRARY} but for tests
   * @param libraryPath where JCuda's natives are looked for ({@code java.library.path})
   * @return the availability
   */
  static Availability probe(String library, String libraryPath) {
    try {
      Optional<String> platform = CudaNatives.unsupportedPlatform();
      if (platform.isPresent()) {
        return Availability.unavailable(platform.get());
      }
      return probeDriver(library, libraryPath);
    } catch (RuntimeException | LinkageError e) {
      return Availability.unavailable(
          "probing "
              + library
              + " failed: "
              + e
              + "; run java with"
              + " --enable-native-access=io.kvtier.backend.cuda (bin/kvtier does)");
    }
  }

  // Loading the driver and calling it is what this class is for: run with native access.
  @SuppressWarnings("restricted")
  private static Availability probeDriver(String library, String libraryPath) {
    SymbolLookup driver;
    try {
      driver = SymbolLookup.libraryLookup(library, Arena.global());
    } catch (IllegalArgumentException e) {
      return Availability.unavailable(
          library
              + " not found: no NVIDIA driver is installed or visible here (install the NVIDIA"
              + " driver, or start the container with the NVIDIA runtime, for example docker run"
              + " --gpus all); without a GPU use kvtier.device=sim");
    }
    Optional<MethodHandle> cuInit = function(driver, "cuInit", INT_OF_INT);
    if (cuInit.isEmpty()) {
      return Availability.unavailable(
          library
              + " has no cuInit symbol: it is not the NVIDIA driver library; check"
              + " LD_LIBRARY_PATH="
              + System.getenv("LD_LIBRARY_PATH"));
    }
    try (Arena arena = Arena.ofConfined()) {
      int result = (int) cuInit.get().invokeExact(0);
      if (result != CUDA_SUCCESS) {
        return Availability.unavailable(initFailure(driver, library, result));
      }
      MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
      int version = callWithOut(driver, "cuDriverGetVersion", out);
      if (version < MIN_DRIVER_VERSION) {
        return Availability.unavailable(
            "the NVIDIA driver supports CUDA "
                + formatVersion(version)
                + " but the cuda backend"
                + " (JCuda "
                + CudaNatives.JCUDA_VERSION
                + ") needs a driver for CUDA 12.0 or"
                + " newer: update the NVIDIA driver");
      }
      int count = callWithOut(driver, "cuDeviceGetCount", out);
      if (count < 1) {
        return Availability.unavailable(
            "the NVIDIA driver reports no CUDA device (CUDA_VISIBLE_DEVICES="
                + System.getenv("CUDA_VISIBLE_DEVICES")
                + "): check nvidia-smi");
      }
      Optional<String> natives = CudaNatives.locate(libraryPath);
      if (natives.isEmpty()) {
        return Availability.unavailable(CudaNatives.missingReason(libraryPath));
      }
      return Availability.available(
          deviceName(driver, arena)
              + " (device 0 of "
              + count
              + "), driver for CUDA "
              + formatVersion(version)
              + ", JCuda natives "
              + natives.get());
    } catch (Throwable t) {
      // invokeExact declares Throwable; a downcall itself throws only for a broken descriptor.
      if (t instanceof Error e && !(e instanceof LinkageError)) {
        throw e;
      }
      throw new IllegalStateException("calling " + library + " failed: " + t, t);
    }
  }

  private static String initFailure(SymbolLookup driver, String library, int result) {
    String name = errorName(driver, result);
    return switch (result) {
      case CUDA_ERROR_NO_DEVICE ->
          "cuInit returned "
              + name
              + ": the NVIDIA driver is installed but sees no GPU"
              + " (CUDA_VISIBLE_DEVICES="
              + System.getenv("CUDA_VISIBLE_DEVICES")
              + "); check nvidia-smi";
      case CUDA_ERROR_STUB_LIBRARY ->
          "cuInit returned "
              + name
              + ": "
              + library
              + " is the CUDA toolkit's stub, not the"
              + " driver; remove the toolkit's stubs directory from LD_LIBRARY_PATH="
              + System.getenv("LD_LIBRARY_PATH")
              + " or install the NVIDIA driver";
      case CUDA_ERROR_INSUFFICIENT_DRIVER ->
          "cuInit returned "
              + name
              + ": the NVIDIA driver is too old for this CUDA library;"
              + " update the driver";
      default ->
          "cuInit returned "
              + name
              + ": the NVIDIA driver could not start; check"
              + " nvidia-smi and dmesg";
    };
  }

  @SuppressWarnings("restricted")
  private static Optional<MethodHandle> function(
      SymbolLookup library, String symbol, FunctionDescriptor descriptor) {
    return library.find(symbol).map(s -> Linker.nativeLinker().downcallHandle(s, descriptor));
  }

  /** Calls {@code CUresult f(int *out)} and returns {@code *out}, failing on an error result. */
  private static int callWithOut(SymbolLookup driver, String symbol, MemorySegment out)
      throws Throwable {
    MethodHandle f =
        function(driver, symbol, INT_OF_POINTER)
            .orElseThrow(() -> new IllegalStateException("libcuda has no symbol " + symbol));
    int result = (int) f.invokeExact(out);
    if (result != CUDA_SUCCESS) {
      throw new IllegalStateException(symbol + " returned " + errorName(driver, result));
    }
    return out.get(ValueLayout.JAVA_INT, 0);
  }

  private static String deviceName(SymbolLookup driver, Arena arena) throws Throwable {
    MemorySegment device = arena.allocate(ValueLayout.JAVA_INT);
    Optional<MethodHandle> get =
        function(
            driver,
            "cuDeviceGet",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    Optional<MethodHandle> getName =
        function(
            driver,
            "cuDeviceGetName",
            FunctionDescriptor.of(
                ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT));
    if (get.isEmpty()
        || getName.isEmpty()
        || (int) get.get().invokeExact(device, 0) != CUDA_SUCCESS) {
      return "CUDA device";
    }
    int length = 256;
    MemorySegment name = arena.allocate(length);
    int result = (int) getName.get().invokeExact(name, length, device.get(ValueLayout.JAVA_INT, 0));
    return result == CUDA_SUCCESS ? name.getString(0) : "CUDA device";
  }

  /** The driver's name of a CUresult, for example {@code CUDA_ERROR_NO_DEVICE (100)}. */
  @SuppressWarnings("restricted")
  static String errorName(SymbolLookup driver, int result) {
    Optional<MethodHandle> f =
        function(
            driver,
            "cuGetErrorName",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
    if (f.isPresent()) {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
        if ((int) f.get().invokeExact(result, out) == CUDA_SUCCESS) {
          MemorySegment text = out.get(ValueLayout.ADDRESS, 0);
          if (!text.equals(MemorySegment.NULL)) {
            // A static string of the driver: the bound only lets getString scan to its NUL.
            return text.reinterpret(4096).getString(0) + " (" + result + ")";
          }
        }
      } catch (Throwable t) {
        // Fall through to the number: the name is a courtesy.
      }
    }
    return "CUresult " + result;
  }

  /** Formats cuDriverGetVersion's {@code 1000 * major + 10 * minor}. */
  static String formatVersion(int version) {
    return (version / 1000) + "." + (version % 1000) / 10;
  }
}
