package io.kvtier.spi;

import java.util.Arrays;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * A batch of page copies in one direction: page {@code devicePages[i]} of the device pool is
 * copied to or from page {@code hostPages[i]} of the host pool, for every layer or for one.
 *
 * <p>The arrays are copied on construction and on access, so a batch is immutable.
 *
 * @param direction the copy direction
 * @param devicePages device page of each copy, each {@code >= 0}
 * @param hostPages host page of each copy, same length as {@code devicePages}
 * @param layer the single layer to copy, or empty for all layers
 */
public record TransferBatch(
    TransferDirection direction, int[] devicePages, int[] hostPages, OptionalInt layer) {

  /** Validates and copies the fields. */
  public TransferBatch {
    Objects.requireNonNull(direction, "direction");
    Objects.requireNonNull(layer, "layer");
    devicePages = Objects.requireNonNull(devicePages, "devicePages").clone();
    hostPages = Objects.requireNonNull(hostPages, "hostPages").clone();
    if (devicePages.length != hostPages.length) {
      throw new IllegalArgumentException(
          "devicePages.length=" + devicePages.length + " != hostPages.length=" + hostPages.length);
    }
    for (int i = 0; i < devicePages.length; i++) {
      if (devicePages[i] < 0 || hostPages[i] < 0) {
        throw new IllegalArgumentException(
            "negative page at index " + i + ": device=" + devicePages[i] + " host=" + hostPages[i]);
      }
    }
    if (layer.isPresent() && layer.getAsInt() < 0) {
      throw new IllegalArgumentException("layer=" + layer.getAsInt() + " must be >= 0");
    }
  }

  /**
   * A batch over all layers.
   *
   * @param direction the direction
   * @param devicePages device pages
   * @param hostPages host pages
   * @return the batch
   */
  public static TransferBatch allLayers(
      TransferDirection direction, int[] devicePages, int[] hostPages) {
    return new TransferBatch(direction, devicePages, hostPages, OptionalInt.empty());
  }

  /**
   * A batch for one layer.
   *
   * @param direction the direction
   * @param devicePages device pages
   * @param hostPages host pages
   * @param layer the layer
   * @return the batch
   */
  public static TransferBatch oneLayer(
      TransferDirection direction, int[] devicePages, int[] hostPages, int layer) {
    return new TransferBatch(direction, devicePages, hostPages, OptionalInt.of(layer));
  }

  /**
   * Number of page copies.
   *
   * @return the batch size
   */
  public int size() {
    return devicePages.length;
  }

  @Override
  public int[] devicePages() {
    return devicePages.clone();
  }

  @Override
  public int[] hostPages() {
    return hostPages.clone();
  }

  /**
   * The device page of copy {@code i}, without copying the array.
   *
   * @param i the copy's index
   * @return the device page
   */
  public int devicePage(int i) {
    return devicePages[i];
  }

  /**
   * The host page of copy {@code i}, without copying the array.
   *
   * @param i the copy's index
   * @return the host page
   */
  public int hostPage(int i) {
    return hostPages[i];
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TransferBatch b
        && direction == b.direction
        && Arrays.equals(devicePages, b.devicePages)
        && Arrays.equals(hostPages, b.hostPages)
        && layer.equals(b.layer);
  }

  @Override
  public int hashCode() {
    return Objects.hash(direction, Arrays.hashCode(devicePages), Arrays.hashCode(hostPages), layer);
  }

  @Override
  public String toString() {
    return "TransferBatch["
        + direction
        + ", pages="
        + devicePages.length
        + (layer.isPresent() ? ", layer=" + layer.getAsInt() : ", all layers")
        + "]";
  }
}
