package io.kvtier.spi;

/**
 * The device (L1) KV page pool: where the model reads and writes attention KV. A device pool
 * copies pages to and from a host pool through the {@link TransferEngine} it creates.
 */
public interface DeviceMemory extends PageMemory {

  /**
   * Creates the transfer engine between this device pool and a host pool. The engine is closed
   * with {@link TransferEngine#close()} and before either pool is closed.
   *
   * @param host the host pool; a device may require a host pool of its own provider (a CUDA
   *     device requires pinned memory) and throws {@link IllegalArgumentException} naming the
   *     requirement otherwise
   * @return a new transfer engine
   */
  TransferEngine transferEngine(HostMemory host);
}
