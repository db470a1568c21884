package io.kvtier.model.llama;

/**
 * The positions of a sequence one rank of a context-parallel group owns: position {@code p}
 * belongs to rank {@code (p / interleave) mod ranks}, so the ranks take turns by blocks of {@code
 * interleave} positions ({@code 1}: one position each). A rank's rows are its positions in order;
 * {@link #localIndex} is a position's index among them and {@link #owned} how many of a prefix
 * are the rank's.
 *
 * <p>{@link #WHOLE} owns every position: the stripe of a rank that holds the whole sequence (one
 * rank, or tensor parallelism).
 *
 * @param rank the rank
 * @param ranks the ranks the sequence is striped over, at least 1
 * @param interleave positions per block, at least 1
 */
record Stripe(int rank, int ranks, int interleave) {
  /** Every position, in order. */
  static final Stripe WHOLE = new Stripe(0, 1, 1);

  Stripe {
    if (ranks < 1 || interleave < 1 || rank < 0 || rank >= ranks) {
      throw new IllegalArgumentException(
          "rank=" + rank + " ranks=" + ranks + " interleave=" + interleave);
    }
  }

  /** Whether this stripe is every position. */
  boolean whole() {
    return ranks == 1;
  }

  /** Positions of one turn of every rank. */
  private int cycle() {
    return ranks * interleave;
  }

  /** Whether {@code position} is this rank's. */
  boolean owns(int position) {
    return (position / interleave) % ranks == rank;
  }

  /** The rank that owns {@code position}. */
  int owner(int position) {
    return (position / interleave) % ranks;
  }

  /** How many of positions {@code 0..count-1} are this rank's. */
  int owned(int count) {
    int turns = count / cycle();
    int rest = count % cycle() - rank * interleave;
    return turns * interleave + Math.clamp(rest, 0, interleave);
  }

  /** How many of positions {@code from..to-1} are this rank's. */
  int owned(int from, int to) {
    return owned(to) - owned(from);
  }

  /** The stripe of another rank of the same group. */
  Stripe of(int otherRank) {
    return new Stripe(otherRank, ranks, interleave);
  }

  /** The index of an owned {@code position} among this rank's positions. */
  int localIndex(int position) {
    return position / cycle() * interleave + position % interleave;
  }

  /** The position of this rank's {@code index}-th row. */
  int position(int index) {
    return index / interleave * cycle() + rank * interleave + index % interleave;
  }
}
