package io.kvtier.store.internal;

import java.util.Objects;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Lets operations run concurrently and {@code close()} run alone: an operation holds the read
 * side for its whole call, {@code close()} takes the write side. So close waits for calls in
 * flight before it frees memory they may be copying, and a call after close fails fast with
 * {@link IllegalStateException} instead of touching freed memory.
 */
public final class StoreGate {

  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final String storeName;
  private boolean closed;

  /**
   * Creates an open gate.
   *
   * @param storeName the store, for messages, for example {@code memory store 'ns'}
   */
  public StoreGate(String storeName) {
    this.storeName = Objects.requireNonNull(storeName, "storeName");
  }

  /**
   * Enters an operation; pair with {@link #exit()} in a {@code finally} block.
   *
   * @param op the operation, for the message
   * @throws IllegalStateException if the store is closed
   */
  public void enter(String op) {
    lock.readLock().lock();
    if (closed) {
      lock.readLock().unlock();
      throw new IllegalStateException(
          op + "() on the " + storeName + " after close(): open a new store");
    }
  }

  /**
   * Enters an operation if the store is open; pair a true answer with {@link #exit()}.
   *
   * @return true if entered, false if the store is closed
   */
  public boolean tryEnter() {
    lock.readLock().lock();
    if (closed) {
      lock.readLock().unlock();
      return false;
    }
    return true;
  }

  /** Leaves an operation entered with {@link #enter} or {@link #tryEnter}. */
  public void exit() {
    lock.readLock().unlock();
  }

  /**
   * Closes once: waits for the operations in flight, then runs {@code release}. Later calls do
   * nothing.
   *
   * @param release frees the store's resources
   * @return true if this call closed the gate
   */
  public boolean closeOnce(Runnable release) {
    lock.writeLock().lock();
    try {
      if (closed) {
        return false;
      }
      closed = true;
      release.run();
      return true;
    } finally {
      lock.writeLock().unlock();
    }
  }

  /**
   * Whether {@link #closeOnce} ran.
   *
   * @return true once closed
   */
  public boolean isClosed() {
    lock.readLock().lock();
    try {
      return closed;
    } finally {
      lock.readLock().unlock();
    }
  }
}
