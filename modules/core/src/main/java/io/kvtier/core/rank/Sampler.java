package io.kvtier.core.rank;

import java.util.SplittableRandom;

/**
 * Chooses a token from a row of logits under a request's {@link Sampling}; a model that samples
 * ({@link ModelRunner#samples()}) calls it where it would take the largest logit.
 *
 * <p>The choice is a pure function of the logits, the sampling and the position of the token
 * chosen: the uniform draw for position {@code p} comes from a {@link SplittableRandom} seeded by
 * the request's seed and {@code p}, and every step runs in one fixed order. So every rank, given
 * the same logits (a model's replicated logits are) and the same JVM on the same kind of CPU (as
 * the model's own kernels need), chooses the same token, and the token at a position does not
 * depend on how many tokens a step produced (speculative verification draws what plain decoding
 * would).
 *
 * <p>The filters apply as vLLM applies them: temperature, then top-k, then top-p over the top-k's
 * renormalised probabilities; the order that ranks tokens is the logit's, the lower id first on
 * ties. The draw then walks the tokens kept in id order. Why selection, not a sort: sorting a
 * 152K-token row costs about 1.8 ms on one core, more than the rest of the choice; the top-k and
 * the nucleus are found by quickselect (expected linear), the nucleus among the tokens that can be
 * in it only (docs/PERFORMANCE.md, "Sampling").
 */
public final class Sampler {
  /** Per-thread scratch of a row: models sample on their scheduler thread, a row at a time. */
  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  private Sampler() {}

  /**
   * The token at position {@code position} of the step's request from the logits {@code
   * logits[from, from + length)}, chosen under {@code step.sampling()}; where the request asked
   * for log-probabilities, they are recorded in {@code step.logprobs()}. What a model that {@link
   * ModelRunner#reportsLogprobs()} calls for each token it chooses. The request's {@link
   * LogitBias}, its {@link MinTokens} and then its {@link Penalties} apply to a copy of the row
   * first (the row is left as it is; the log-probabilities are the row's own).
   *
   * @param logits the logits
   * @param from the first logit of the row
   * @param length the vocabulary size, at least 1
   * @param step the step whose request the token is for
   * @param position the position the token takes in the request's sequence
   * @return a token id in {@code [0, length)}
   * @throws IllegalStateException if a logit is NaN or infinite where sampling reads it
   */
  public static int choose(float[] logits, int from, int length, ModelStep step, int position) {
    Sampling sampling = step.sampling();
    int token;
    if (!sampling.adjustsLogits()) {
      token = choose(logits, from, length, sampling, position);
    } else {
      Scratch s = SCRATCH.get();
      float[] row = s.penalized(length);
      System.arraycopy(logits, from, row, 0, length);
      sampling.logitBias().apply(row, length);
      sampling.minTokens().apply(row, length, position - step.promptLength());
      sampling
          .penalties()
          .apply(row, length, step.tokens(), step.promptLength(), position, s.zeros(length));
      token = choose(row, 0, length, sampling, position);
    }
    step.logprobs().record(position, logits, from, length, token);
    return token;
  }

  /**
   * The token at position {@code position} from the logits {@code logits[from, from + length)}.
   *
   * @param logits the logits
   * @param from the first logit of the row
   * @param length the vocabulary size, at least 1
   * @param sampling how to choose
   * @param position the position the token takes in the request's sequence
   * @return a token id in {@code [0, length)}
   * @throws IllegalStateException if a logit is NaN or infinite where sampling reads it
   */
  public static int choose(float[] logits, int from, int length, Sampling sampling, int position) {
    if (length < 1 || from < 0 || from > logits.length - length) {
      throw new IllegalArgumentException(
          "logits from=" + from + " length=" + length + " capacity=" + logits.length);
    }
    if (sampling.greedy()) {
      return argmax(logits, from, length);
    }
    Scratch s = SCRATCH.get().size(length);
    double[] w = s.weights;
    double t = sampling.temperature();
    float max = logits[from + argmax(logits, from, length)];
    double total = 0;
    for (int i = 0; i < length; i++) {
      w[i] = Math.exp((logits[from + i] - max) / t);
      total += w[i];
    }
    if (!Double.isFinite(total) || !Float.isFinite(max)) {
      throw new IllegalStateException(
          "the model's logits hold a NaN or infinite value (largest " + max + "): cannot sample");
    }
    double u = draw(sampling.seed(), position);
    int k = sampling.topK() == 0 ? length : Math.min(sampling.topK(), length);
    if (k == length && sampling.topP() >= 1) {
      return pick(w, null, length, u * total);
    }
    int[] ids = s.ids;
    boolean[] kept = s.kept;
    int n = 0;
    if (k == length) {
      // Top-p alone: the tokens below (1 - p) of the mean weight together weigh less than the
      // 1 - p the nucleus leaves out, and rank after every other, so the nucleus is among the
      // rest; on a peaked row that is a few hundred tokens.
      double floor = (1 - sampling.topP()) * total / length;
      for (int i = 0; i < length; i++) {
        if (w[i] >= floor) {
          ids[n++] = i;
        }
      }
    } else {
      // Top-k: each of k blocks of the row holds a token at least as heavy as the lightest block
      // maximum, so at least k tokens reach it, and the k heaviest are among them.
      int size = length / k;
      double floor = Double.POSITIVE_INFINITY;
      for (int b = 0; b < k; b++) {
        int end = b == k - 1 ? length : (b + 1) * size;
        double most = 0;
        for (int i = b * size; i < end; i++) {
          most = Math.max(most, w[i]);
        }
        floor = Math.min(floor, most);
      }
      for (int i = 0; i < length; i++) {
        if (w[i] >= floor) {
          ids[n++] = i;
        }
      }
    }
    double base = total;
    if (k < length) {
      selectFirst(ids, n, k, logits, from);
      n = k;
      base = markedSum(ids, n, kept, w, length);
    }
    if (sampling.topP() < 1) {
      n = nucleus(ids, n, sampling.topP() * base, logits, from, w);
      base = markedSum(ids, n, kept, w, length);
    }
    return pick(w, kept, length, u * base);
  }

  /** The index of the largest logit of the row, the lowest on ties. */
  public static int argmax(float[] logits, int from, int length) {
    int best = 0;
    for (int i = 1; i < length; i++) {
      if (logits[from + i] > logits[from + best]) {
        best = i;
      }
    }
    return best;
  }

  /** The uniform draw in [0, 1) of a request's seed for a position. */
  static double draw(long seed, int position) {
    return new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * (position + 1L))).nextDouble();
  }

  /**
   * The first token, in id order, among those {@code kept} (all without it) at which the running
   * sum of weights passes {@code target}; rounding past the end gives the last kept token that
   * weighs anything.
   */
  private static int pick(double[] w, boolean[] kept, int length, double target) {
    double sum = 0;
    int last = -1;
    for (int i = 0; i < length; i++) {
      if (kept == null || kept[i]) {
        sum += w[i];
        if (w[i] > 0) {
          last = i;
        }
        if (sum > target) {
          return i;
        }
      }
    }
    return Math.max(last, 0);
  }

  /** Marks {@code ids[0, n)} kept (every other token not) and sums their weights in id order. */
  private static double markedSum(int[] ids, int n, boolean[] kept, double[] w, int length) {
    java.util.Arrays.fill(kept, 0, length, false);
    for (int i = 0; i < n; i++) {
      kept[ids[i]] = true;
    }
    double sum = 0;
    for (int i = 0; i < length; i++) {
      if (kept[i]) {
        sum += w[i];
      }
    }
    return sum;
  }

  /** Whether token {@code a} ranks before {@code b}: a larger logit, or the lower id on ties. */
  private static boolean before(int a, int b, float[] logits, int from) {
    float la = logits[from + a];
    float lb = logits[from + b];
    return la > lb || (la == lb && a < b);
  }

  /**
   * Partitions {@code ids[lo, hi)} around the middle one: those ranking before it first, then it.
   *
   * @return the pivot's index
   */
  private static int partition(int[] ids, int lo, int hi, float[] logits, int from) {
    int middle = lo + (hi - lo) / 2;
    int pivot = ids[middle];
    ids[middle] = ids[hi - 1];
    ids[hi - 1] = pivot;
    int i = lo;
    for (int j = lo; j < hi - 1; j++) {
      if (before(ids[j], pivot, logits, from)) {
        int x = ids[i];
        ids[i] = ids[j];
        ids[j] = x;
        i++;
      }
    }
    ids[hi - 1] = ids[i];
    ids[i] = pivot;
    return i;
  }

  /** Reorders {@code ids[0, n)} so that its first {@code k} rank before all the others. */
  private static void selectFirst(int[] ids, int n, int k, float[] logits, int from) {
    int lo = 0;
    int hi = n;
    while (hi - lo > 1) {
      int p = partition(ids, lo, hi, logits, from);
      if (k < p) {
        hi = p;
      } else if (k > p + 1) {
        lo = p + 1;
      } else {
        return;
      }
    }
  }

  /**
   * Reorders {@code ids[0, n)} so that its first {@code m} are the nucleus, and returns {@code m}:
   * the fewest tokens, taken in rank order, whose weights reach {@code needed} (all {@code n} if
   * rounding leaves them short).
   */
  private static int nucleus(
      int[] ids, int n, double needed, float[] logits, int from, double[] w) {
    int lo = 0;
    int hi = n;
    double taken = 0;
    while (lo < hi) {
      int p = partition(ids, lo, hi, logits, from);
      double ahead = 0;
      for (int i = lo; i < p; i++) {
        ahead += w[ids[i]];
      }
      if (taken + ahead >= needed) {
        hi = p;
      } else if (taken + ahead + w[ids[p]] >= needed) {
        return p + 1;
      } else {
        taken += ahead + w[ids[p]];
        lo = p + 1;
      }
    }
    return Math.max(lo, 1);
  }

  /** One thread's arrays for a row, grown to the largest vocabulary seen. */
  private static final class Scratch {
    double[] weights = new double[0];
    int[] ids = new int[0];
    boolean[] kept = new boolean[0];
    float[] penalized = new float[0];
    int[] zeros = new int[0];

    /** Counts that are all zero between uses ({@link Penalties#apply} leaves them so). */
    int[] zeros(int length) {
      if (zeros.length < length) {
        zeros = new int[length];
      }
      return zeros;
    }

    /** A row for penalized logits, apart from the arrays {@link #size} gives. */
    float[] penalized(int length) {
      if (penalized.length < length) {
        penalized = new float[length];
      }
      return penalized;
    }

    Scratch size(int length) {
      if (weights.length < length) {
        weights = new double[length];
        ids = new int[length];
        kept = new boolean[length];
      }
      return this;
    }
  }
}
