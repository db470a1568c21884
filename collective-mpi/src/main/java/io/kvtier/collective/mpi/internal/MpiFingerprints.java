package io.kvtier.collective.mpi.internal;

/**
 * A small cache of call fingerprints. An engine calls from a handful of call sites whose tags are
 * string constants, so the same (operation, argument, tag) comes back every tick; hashing the
 * tag's characters each time would be a measurable part of a sub-microsecond call. Direct-mapped
 * by the tag's cached {@code String.hashCode()}, hit only on the identical tag object; one
 * thread at a time uses it (the collective's callers are serialized).
 */
final class MpiFingerprints {

  private static final int SLOTS = 16;

  private final String[] tags = new String[SLOTS];
  private final MpiCall.Kind[] kinds = new MpiCall.Kind[SLOTS];
  private final int[] arguments = new int[SLOTS];
  private final long[] prints = new long[SLOTS];

  /**
   * The fingerprint of a call, from the cache when the same call site was seen last in its slot.
   *
   * @param kind the operation
   * @param argument the array length or root
   * @param tag the call site
   * @return {@link MpiCall#fingerprint(MpiCall.Kind, int, String)}
   */
  long of(MpiCall.Kind kind, int argument, String tag) {
    int slot = (tag.hashCode() ^ kind.ordinal() * 31 ^ argument * 17) & (SLOTS - 1);
    if (tags[slot] == tag && kinds[slot] == kind && arguments[slot] == argument) {
      return prints[slot];
    }
    long print = MpiCall.fingerprint(kind, argument, tag);
    tags[slot] = tag;
    kinds[slot] = kind;
    arguments[slot] = argument;
    prints[slot] = print;
    return print;
  }
}
