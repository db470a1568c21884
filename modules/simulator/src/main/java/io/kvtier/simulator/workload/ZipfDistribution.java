package io.kvtier.simulator.workload;

import java.util.Arrays;

/**
 * A Zipf distribution over ranks {@code 0 .. n-1}: rank {@code k} has a probability proportional
 * to {@code 1 / (k + 1)^alpha}, so rank 0 is the most popular and {@code alpha = 0} is uniform.
 * Sampling inverts the cumulative distribution by binary search, which is exact and fast for the
 * few thousand ranks a workload has.
 */
final class ZipfDistribution {

  private final double[] cumulative;

  /**
   * The distribution over {@code n} ranks.
   *
   * @param n the number of ranks, at least 1
   * @param alpha the exponent, at least 0 and finite
   */
  ZipfDistribution(int n, double alpha) {
    if (n < 1) {
      throw new IllegalArgumentException("n=" + n + " must be >= 1");
    }
    if (!(alpha >= 0) || Double.isInfinite(alpha)) {
      throw new IllegalArgumentException("alpha=" + alpha + " must be a finite number >= 0");
    }
    cumulative = new double[n];
    double sum = 0;
    for (int k = 0; k < n; k++) {
      sum += Math.pow(k + 1, -alpha);
      cumulative[k] = sum;
    }
    for (int k = 0; k < n; k++) {
      cumulative[k] /= sum;
    }
    // rounding may leave the last value just under 1, which a draw close to 1 would overshoot
    cumulative[n - 1] = 1.0;
  }

  /**
   * A rank drawn with one value of {@code rng}.
   *
   * @param rng the generator
   * @return the rank
   */
  int sample(SplitMix64 rng) {
    double u = rng.nextDouble();
    int i = Arrays.binarySearch(cumulative, u);
    // an exact hit on a boundary belongs to the next rank, since rank k covers [cum[k-1], cum[k])
    int rank = i >= 0 ? i + 1 : -i - 1;
    return Math.min(rank, cumulative.length - 1);
  }
}
