/**
 * The CUDA backend: the {@code cuda} device pool ({@link
 * io.kvtier.backend.cuda.CudaDeviceMemoryProvider}), allocated with the CUDA driver API through
 * JCuda, the pinned {@code cuda} host pool ({@link io.kvtier.backend.cuda.CudaHostMemoryProvider}),
 * and a transfer engine that copies page batches as coalesced runs on one stream per direction.
 * Both read the {@code cuda.*} keys of {@link io.kvtier.backend.cuda.CudaConfig}. {@link
 * io.kvtier.backend.cuda.CudaDiagnostics} prints what the availability probe finds; {@link
 * io.kvtier.backend.cuda.CudaBandwidthBenchmark} measures page batches against one contiguous
 * copy.
 */
package io.kvtier.backend.cuda;
