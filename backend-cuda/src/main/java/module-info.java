/**
 * The CUDA backend: a device KV pool allocated with the CUDA driver API through JCuda, a pinned
 * host pool, and a transfer engine that copies page batches on one stream per direction.
 *
 * <p>The providers probe for the driver through {@code java.lang.foreign} and touch JCuda only
 * when a pool is opened, so that listing or skipping this backend on a machine without a GPU never
 * loads native JCuda code.
 */
module io.kvtier.backend.cuda {
  requires transitive io.kvtier.spi;
  // An automatic module (no module-info in the jar); the JNI library comes from
  // java.library.path. JCuda logs through java.util.logging but cannot declare it, and a launch
  // with a named main module does not resolve java.logging on its own: require it for JCuda.
  requires jcuda;
  requires java.logging;

  exports io.kvtier.backend.cuda;

  provides io.kvtier.spi.DeviceMemoryProvider with
      io.kvtier.backend.cuda.CudaDeviceMemoryProvider;
  provides io.kvtier.spi.HostMemoryProvider with
      io.kvtier.backend.cuda.CudaHostMemoryProvider;
}
