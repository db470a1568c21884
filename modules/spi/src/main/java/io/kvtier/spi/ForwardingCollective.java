package io.kvtier.spi;

import java.util.Objects;

/**
 * A {@link Collective} that forwards every call to another: the base class of decorators that
 * time, log, check or fail calls (after Lucene's {@code FilterDirectory}). A subclass overrides
 * the calls it decorates and ends each with the {@code super} call; what it does not override
 * reaches the delegate unchanged, so a decorator never re-implements delegation.
 *
 * <p>{@link #allReduceInto} goes to the delegate's own {@code allReduceInto}, not to the
 * interface's default (which would call {@link #allReduce} and copy): a provider's in-place form
 * keeps its saving through any number of decorators. A subclass that decorates {@link
 * #allReduce} decorates {@code allReduceInto} too, since ranks may mix the two forms.
 *
 * <p>Thread-safety: that of the delegate; this class keeps no state of its own.
 */
public abstract class ForwardingCollective implements Collective {
  /** The collective every call goes to. */
  protected final Collective delegate;

  /**
   * Wraps a collective.
   *
   * @param delegate the collective that does the work
   * @throws NullPointerException if {@code delegate} is null
   */
  protected ForwardingCollective(Collective delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /**
   * The collective this one forwards to.
   *
   * @return the delegate
   */
  public final Collective delegate() {
    return delegate;
  }

  /** {@inheritDoc} Forwards to the delegate. */
  @Override
  public int rank() {
    return delegate.rank();
  }

  /** {@inheritDoc} Forwards to the delegate. */
  @Override
  public int size() {
    return delegate.size();
  }

  /** {@inheritDoc} Forwards to the delegate. */
  @Override
  public long[] allReduce(ReduceOp op, long[] values, String tag) {
    return delegate.allReduce(op, values, tag);
  }

  /** {@inheritDoc} Forwards to the delegate's own form. */
  @Override
  public void allReduceInto(ReduceOp op, long[] values, long[] result, String tag) {
    delegate.allReduceInto(op, values, result, tag);
  }

  /** {@inheritDoc} Forwards to the delegate. */
  @Override
  public byte[] broadcast(int root, byte[] payload, String tag) {
    return delegate.broadcast(root, payload, tag);
  }

  /**
   * {@inheritDoc} Forwards to the delegate's own untimed wait: a decorator that did not would fall
   * back to the default, a timed {@link #broadcast}, and an idle group would fail at the watchdog.
   */
  @Override
  public byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    return delegate.awaitBroadcast(root, payload, tag);
  }

  /** {@inheritDoc} Forwards to the delegate. */
  @Override
  public void barrier(String tag) {
    delegate.barrier(tag);
  }

  /** {@inheritDoc} Forwards to the delegate. */
  @Override
  public void close() {
    delegate.close();
  }
}
