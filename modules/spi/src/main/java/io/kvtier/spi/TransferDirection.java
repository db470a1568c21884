package io.kvtier.spi;

/** The direction of a page copy between the device and the host pool. */
public enum TransferDirection {
  /** Device to host: a backup (write). */
  DEVICE_TO_HOST,
  /** Host to device: a load-back (load). */
  HOST_TO_DEVICE
}
