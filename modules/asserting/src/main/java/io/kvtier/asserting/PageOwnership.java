package io.kvtier.asserting;

import io.kvtier.spi.TransferHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * The ownership state of every page of one pool, and the copies in flight that read or write
 * each page. A test (or an engine's allocator hook) marks pages {@linkplain #allocate allocated}
 * and {@linkplain #free freed}; the asserting pools and engine consult it on every access and
 * throw {@link AssertionError} on misuse.
 *
 * <p>A page nobody marked is <em>untracked</em> and usable, so that code which does not report
 * its allocations still runs under the asserting wrappers; only pages marked freed are unusable.
 * Thread-safe.
 */
public final class PageOwnership {

  /** The state of one page. */
  public enum State {
    /** Never marked: usable, not checked for double free. */
    UNTRACKED,
    /** Marked allocated and not freed since. */
    ALLOCATED,
    /** Marked freed: any use is a use after free. */
    FREED
  }

  /** One copy in flight that touches a page: all layers, or one. */
  private record Copy(TransferHandle handle, OptionalInt layer, String what) {
    boolean touches(OptionalInt otherLayer) {
      return layer.isEmpty() || otherLayer.isEmpty() || layer.equals(otherLayer);
    }
  }

  private final String pool;
  private final State[] states;
  private final List<List<Copy>> incoming;
  private final List<List<Copy>> readers;

  /**
   * Creates the tracker of a pool.
   *
   * @param pool the pool's name in messages, for example {@code "device"}
   * @param pages the pool's page count
   */
  public PageOwnership(String pool, int pages) {
    this.pool = Objects.requireNonNull(pool, "pool");
    if (pages < 1) {
      throw new IllegalArgumentException("pages=" + pages + " must be >= 1");
    }
    this.states = new State[pages];
    java.util.Arrays.fill(states, State.UNTRACKED);
    this.incoming = new ArrayList<>(pages);
    this.readers = new ArrayList<>(pages);
    for (int p = 0; p < pages; p++) {
      incoming.add(new ArrayList<>());
      readers.add(new ArrayList<>());
    }
  }

  /**
   * The pool's name in messages.
   *
   * @return for example {@code "device"}
   */
  public String pool() {
    return pool;
  }

  /**
   * The state of a page.
   *
   * @param page the page, within the pool
   * @return its state
   */
  public synchronized State state(int page) {
    checkIndex(page);
    return states[page];
  }

  /**
   * Marks a page allocated.
   *
   * @param page the page, within the pool
   * @throws AssertionError if the page is allocated already
   */
  public synchronized void allocate(int page) {
    checkIndex(page);
    if (states[page] == State.ALLOCATED) {
      throw new AssertionError(
          pool
              + " page "
              + page
              + " allocated twice: it was allocated and"
              + " not freed; an allocator handed out a page it still owns");
    }
    states[page] = State.ALLOCATED;
  }

  /**
   * Marks a page freed.
   *
   * @param page the page, within the pool
   * @throws AssertionError on a double free, a free of a page never allocated, or a free of a
   *     page that a copy in flight still reads or writes
   */
  public synchronized void free(int page) {
    checkIndex(page);
    switch (states[page]) {
      case FREED -> throw new AssertionError(pool + " page " + page + " freed twice (double free)");
      case UNTRACKED ->
          throw new AssertionError(pool + " page " + page + " freed but never marked allocated");
      case ALLOCATED -> {}
    }
    pending(readers, page, OptionalInt.empty())
        .ifPresent(
            c -> {
              throw new AssertionError(
                  pool
                      + " page "
                      + page
                      + " freed while "
                      + c.what()
                      + " still reads it (isDone() false): await the copy before freeing its source");
            });
    pending(incoming, page, OptionalInt.empty())
        .ifPresent(
            c -> {
              throw new AssertionError(
                  pool
                      + " page "
                      + page
                      + " freed while "
                      + c.what()
                      + " still writes it (isDone() false): await the copy before freeing its destination");
            });
    states[page] = State.FREED;
  }

  /**
   * Fails if a page is freed or has an incoming copy that is not done; for reads of a page.
   *
   * @param page the page; out-of-range pages are left to the pool's own bounds check
   * @param layer the layer read, or empty for all
   * @param action what is being done, for the message
   */
  synchronized void checkRead(int page, OptionalInt layer, String action) {
    if (!inRange(page)) {
      return;
    }
    checkNotFreed(page, action);
    pending(incoming, page, layer)
        .ifPresent(
            c -> {
              throw new AssertionError(
                  action
                      + " of "
                      + pool
                      + " page "
                      + page
                      + layerText(layer)
                      + " while its incoming "
                      + c.what()
                      + " has not completed (isDone() false): await"
                      + " the handle before using the destination");
            });
  }

  /**
   * Fails if a page is freed, or a copy in flight still reads it or still writes it; for writes.
   *
   * @param page the page; out-of-range pages are left to the pool's own bounds check
   * @param layer the layer written, or empty for all
   * @param action what is being done, for the message
   */
  synchronized void checkWrite(int page, OptionalInt layer, String action) {
    if (!inRange(page)) {
      return;
    }
    checkNotFreed(page, action);
    pending(readers, page, layer)
        .ifPresent(
            c -> {
              throw new AssertionError(
                  action
                      + " overwrites "
                      + pool
                      + " page "
                      + page
                      + layerText(layer)
                      + " that "
                      + c.what()
                      + " still reads (isDone() false): the"
                      + " copy's source must stay unchanged until the copy is done");
            });
  }

  /**
   * Fails if a page is freed; for uses that are neither a plain read nor a plain write.
   *
   * @param page the page; out-of-range pages are left to the pool's own bounds check
   * @param action what is being done, for the message
   */
  synchronized void checkNotFreed(int page, String action) {
    if (inRange(page) && states[page] == State.FREED) {
      throw new AssertionError(
          action + " of " + pool + " page " + page + " after it was freed" + " (use after free)");
    }
  }

  synchronized void addIncoming(int page, OptionalInt layer, TransferHandle handle, String what) {
    incoming.get(page).add(new Copy(handle, layer, what));
  }

  synchronized void addReader(int page, OptionalInt layer, TransferHandle handle, String what) {
    readers.get(page).add(new Copy(handle, layer, what));
  }

  /**
   * Fails if any copy that touches this pool is still in flight; for closing the pool.
   *
   * @param action what is being done, for the message
   */
  synchronized void checkNoCopyInFlight(String action) {
    for (int p = 0; p < states.length; p++) {
      int page = p;
      pending(readers, p, OptionalInt.empty())
          .or(() -> pending(incoming, page, OptionalInt.empty()))
          .ifPresent(
              c -> {
                throw new AssertionError(
                    action
                        + " while "
                        + c.what()
                        + " on "
                        + pool
                        + " page "
                        + page
                        + " is in flight (isDone() false): await every copy first");
              });
    }
  }

  /** The first copy in flight on a page that touches the layer; drops the copies that are done. */
  private java.util.Optional<Copy> pending(List<List<Copy>> copies, int page, OptionalInt layer) {
    List<Copy> list = copies.get(page);
    list.removeIf(c -> c.handle().isDone());
    return list.stream().filter(c -> c.touches(layer)).findFirst();
  }

  private boolean inRange(int page) {
    return page >= 0 && page < states.length;
  }

  private void checkIndex(int page) {
    if (!inRange(page)) {
      throw new IndexOutOfBoundsException(
          "page=" + page + " is outside the " + pool + " pool of " + states.length + " pages");
    }
  }

  private static String layerText(OptionalInt layer) {
    return layer.isPresent() ? " layer " + layer.getAsInt() : "";
  }
}
