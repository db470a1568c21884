package io.kvtier.testkit.conformance;

import io.kvtier.spi.TransferDirection;
import java.time.Duration;

/**
 * The hooks through which {@link DeviceMemoryConformanceSuite} drives a provider's transfer
 * engine. Each method is called only when its {@link TransferCapability} is declared; the default
 * implementations throw {@link UnsupportedOperationException} naming the capability, so a
 * subclass implements only what it declares.
 */
public interface TransferControl {

  /** A control with no capability. */
  TransferControl NONE = new TransferControl() {};

  /**
   * Moves the virtual clock forward ({@link TransferCapability#VIRTUAL_TIME}).
   *
   * @param duration how far, positive
   */
  default void advance(Duration duration) {
    throw new UnsupportedOperationException(
        "advance("
            + duration
            + ") needs "
            + TransferCapability.VIRTUAL_TIME
            + ": implement TransferControl.advance in the suite subclass and declare it");
  }

  /**
   * Holds back the completion of every batch of {@code direction} submitted from now on, until
   * {@link #release} ({@link TransferCapability#STALL_INJECTION}).
   *
   * @param direction the direction to stall
   */
  default void stall(TransferDirection direction) {
    throw new UnsupportedOperationException(
        "stall("
            + direction
            + ") needs "
            + TransferCapability.STALL_INJECTION
            + ": implement TransferControl.stall/release in the suite subclass and declare it");
  }

  /**
   * Lets stalled batches of {@code direction} complete ({@link
   * TransferCapability#STALL_INJECTION}).
   *
   * @param direction the direction to release
   */
  default void release(TransferDirection direction) {
    throw new UnsupportedOperationException(
        "release("
            + direction
            + ") needs "
            + TransferCapability.STALL_INJECTION
            + ": implement TransferControl.stall/release in the suite subclass and declare it");
  }

  /**
   * Makes the next batch of {@code direction} fail with a {@link
   * io.kvtier.spi.TransferFailedException} ({@link TransferCapability#FAULT_INJECTION}).
   *
   * @param direction the direction
   */
  default void failNext(TransferDirection direction) {
    throw new UnsupportedOperationException(
        "failNext("
            + direction
            + ") needs "
            + TransferCapability.FAULT_INJECTION
            + ": implement TransferControl.failNext in the suite subclass and declare it");
  }
}
