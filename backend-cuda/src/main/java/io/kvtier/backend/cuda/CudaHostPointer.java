package io.kvtier.backend.cuda;

import jcuda.Pointer;

/**
 * A JCuda {@link Pointer} to a plain host address, and the address of one that the driver filled
 * in ({@code cuMemHostAlloc}). JCuda keeps both behind protected members; a subclass may use them.
 */
final class CudaHostPointer extends Pointer {

  /** An empty pointer for the driver to fill in. */
  CudaHostPointer() {}

  private CudaHostPointer(long address) {
    super(address);
  }

  /**
   * A pointer to a host address, for example of a native {@link java.lang.foreign.MemorySegment}.
   *
   * @param address the address, not 0
   * @return the pointer
   */
  static CudaHostPointer at(long address) {
    if (address == 0) {
      throw new IllegalArgumentException("host address is 0");
    }
    return new CudaHostPointer(address);
  }

  /**
   * The address this pointer holds.
   *
   * @return the address, 0 for an empty pointer
   */
  long address() {
    return getNativePointer() + getByteOffset();
  }
}
