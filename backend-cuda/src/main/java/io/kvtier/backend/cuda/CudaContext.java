package io.kvtier.backend.cuda;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.JCudaDriver;

/**
 * The primary context of one GPU, retained once per JVM and shared by every pool on that GPU, so
 * that pools of one GPU may copy to each other. It is never released: creating a primary context
 * takes hundreds of milliseconds, a server opens its pools once, and the driver tears the context
 * down when the process exits.
 *
 * <p>Threading: in the driver API the current context is per thread. Every entry point of this
 * backend that may run on a thread of its caller's choosing (pool read and write, transfer submit,
 * handle queries and waits, close) calls {@link #makeCurrent()} first; it is a cheap thread-local
 * store in the driver.
 */
final class CudaContext {

  /** The retained contexts, by device ordinal. */
  private static final Map<Integer, CudaContext> SHARED = new ConcurrentHashMap<>();

  private final int ordinal;
  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final String name;
  private final long maxPitch;

  private CudaContext(int ordinal) {
    this.ordinal = ordinal;
    CudaDriver.check(
        "cuDeviceGet(" + ordinal + ")", () -> JCudaDriver.cuDeviceGet(device, ordinal));
    CudaDriver.check(
        "cuDevicePrimaryCtxRetain(device " + ordinal + ")",
        () -> JCudaDriver.cuDevicePrimaryCtxRetain(context, device));
    try {
      makeCurrent();
      this.name = deviceName();
      this.maxPitch = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_PITCH);
    } catch (RuntimeException e) {
      CudaDriver.result(() -> JCudaDriver.cuDevicePrimaryCtxRelease(device));
      throw e;
    }
  }

  /**
   * The primary context of a GPU, retained on first use, made current on this thread.
   *
   * @param ordinal the device ordinal, from {@code cuda.device}
   * @return the context
   * @throws IllegalArgumentException if there is no such device, naming the count
   * @throws IllegalStateException if JCuda or the driver cannot start
   */
  static CudaContext of(int ordinal) {
    CudaDriver.ensureLoaded();
    CudaContext context = SHARED.computeIfAbsent(ordinal, CudaContext::retain);
    context.makeCurrent();
    return context;
  }

  private static CudaContext retain(int ordinal) {
    int[] count = new int[1];
    CudaDriver.check("cuDeviceGetCount", () -> JCudaDriver.cuDeviceGetCount(count));
    if (ordinal >= count[0]) {
      throw new IllegalArgumentException(
          CudaConfig.DEVICE
              + "="
              + ordinal
              + " but this machine has "
              + count[0]
              + " CUDA device(s): use an ordinal from 0 to "
              + (count[0] - 1));
    }
    return new CudaContext(ordinal);
  }

  /**
   * Makes this context current on the calling thread.
   *
   * @throws CudaDriverException if the driver refuses
   */
  void makeCurrent() {
    int result = trySetCurrent();
    if (result != CudaDriver.SUCCESS) {
      throw CudaDriver.failure("cuCtxSetCurrent(device " + ordinal + ")", result);
    }
  }

  /**
   * Makes this context current on the calling thread, for paths that must not throw.
   *
   * @return the driver's result
   */
  int trySetCurrent() {
    return CudaDriver.result(() -> JCudaDriver.cuCtxSetCurrent(context));
  }

  /**
   * The device's name.
   *
   * @return for example {@code NVIDIA H200}
   */
  String name() {
    return name;
  }

  /**
   * The device ordinal.
   *
   * @return the ordinal
   */
  int ordinal() {
    return ordinal;
  }

  /**
   * The largest pitch a strided copy may use on this device ({@code
   * CU_DEVICE_ATTRIBUTE_MAX_PITCH}).
   *
   * @return bytes
   */
  long maxPitch() {
    return maxPitch;
  }

  /**
   * Free and total device memory.
   *
   * @return a description for messages, for example {@code free=1024 total=4096 bytes}
   */
  String memoryInfo() {
    long[] free = new long[1];
    long[] total = new long[1];
    int result = CudaDriver.result(() -> JCudaDriver.cuMemGetInfo(free, total));
    return result == CudaDriver.SUCCESS
        ? "free=" + free[0] + " total=" + total[0] + " bytes"
        : "free and total unknown: " + CudaDriver.name(result);
  }

  private String deviceName() {
    byte[] bytes = new byte[256];
    CudaDriver.check(
        "cuDeviceGetName", () -> JCudaDriver.cuDeviceGetName(bytes, bytes.length, device));
    int end = 0;
    while (end < bytes.length && bytes[end] != 0) {
      end++;
    }
    return new String(bytes, 0, end, StandardCharsets.UTF_8);
  }

  private long attribute(int attribute) {
    int[] value = new int[1];
    CudaDriver.check(
        "cuDeviceGetAttribute(" + attribute + ")",
        () -> JCudaDriver.cuDeviceGetAttribute(value, attribute, device));
    // Reported as a signed int; a value of 0 or less means "no strided copies".
    return Math.max(0, value[0]);
  }

  @Override
  public String toString() {
    return name + " (device " + ordinal + ")";
  }
}
