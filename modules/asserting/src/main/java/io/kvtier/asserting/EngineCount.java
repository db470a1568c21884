package io.kvtier.asserting;

import java.util.concurrent.atomic.AtomicInteger;

/** The transfer engines open on a pool: a pool must outlive its engines. */
final class EngineCount {
  private final AtomicInteger open = new AtomicInteger();

  void opened() {
    open.incrementAndGet();
  }

  void closed() {
    open.decrementAndGet();
  }

  void checkNoneOpen(String action) {
    int n = open.get();
    if (n > 0) {
      throw new AssertionError(
          action
              + " while "
              + n
              + " transfer engine(s) on it are open:"
              + " close every TransferEngine before its pools");
    }
  }
}
