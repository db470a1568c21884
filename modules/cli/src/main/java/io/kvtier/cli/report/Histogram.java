package io.kvtier.cli.report;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Counts of two samples over the same equal-width bins, for a grouped bar chart that compares
 * them. The bin width is a round number (1, 2, 2.5 or 5 times a power of ten) so that the labels
 * read well; the bins start at 0 and the last one holds the largest value.
 *
 * @param width the width of a bin
 * @param first the first sample's count per bin
 * @param second the second sample's count per bin
 */
record Histogram(double width, long[] first, long[] second) {
  /** Validates the width and copies the counts, which must cover the same bins. */
  Histogram {
    if (!(width > 0) || Double.isInfinite(width)) {
      throw new IllegalArgumentException("width=" + width + " must be finite and > 0");
    }
    first = first.clone();
    second = second.clone();
    if (first.length != second.length || first.length == 0) {
      throw new IllegalArgumentException(
          "bins differ or are missing: " + first.length + " and " + second.length);
    }
  }

  /**
   * Bins two samples of values at least 0.
   *
   * @param a the first sample
   * @param b the second sample
   * @param maxBins the most bins, at least 1
   * @return the histogram; one bin of width 1 if both samples are empty or all zero
   */
  static Histogram of(double[] a, double[] b, int maxBins) {
    if (maxBins < 1) {
      throw new IllegalArgumentException("maxBins=" + maxBins + " must be >= 1");
    }
    double max = Math.max(Arrays.stream(a).max().orElse(0), Arrays.stream(b).max().orElse(0));
    double width = roundUp(max / maxBins);
    // max / width can land a hair past maxBins when width is max / maxBins exactly
    int bins = (int) Math.max(1, Math.min(maxBins, Math.ceil(max / width)));
    return new Histogram(width, count(a, width, bins), count(b, width, bins));
  }

  private static long[] count(double[] values, double width, int bins) {
    long[] counts = new long[bins];
    for (double v : values) {
      if (!(v >= 0) || Double.isInfinite(v)) {
        throw new IllegalArgumentException("value " + v + " must be finite and >= 0");
      }
      counts[(int) Math.min(bins - 1, Math.floor(v / width))]++;
    }
    return counts;
  }

  /** The smallest of 1, 2, 2.5, 5 times a power of ten that is at least {@code v}; 1 for 0. */
  private static double roundUp(double v) {
    if (v <= 0) {
      return 1;
    }
    double magnitude = Math.pow(10, Math.floor(Math.log10(v)));
    for (double step : new double[] {1, 2, 2.5, 5, 10}) {
      if (step * magnitude >= v) {
        return step * magnitude;
      }
    }
    return 10 * magnitude;
  }

  /**
   * The bins' labels, {@code "from-to"}.
   *
   * @return one label per bin
   */
  List<String> labels() {
    String[] labels = new String[first.length];
    for (int i = 0; i < labels.length; i++) {
      labels[i] = number(i * width) + "-" + number((i + 1) * width);
    }
    return List.of(labels);
  }

  /**
   * A sample's counts as chart values.
   *
   * @param counts {@link #first()} or {@link #second()}
   * @return the counts as doubles
   */
  static double[] values(long[] counts) {
    return Arrays.stream(counts).asDoubleStream().toArray();
  }

  @Override
  public long[] first() {
    return first.clone();
  }

  @Override
  public long[] second() {
    return second.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Histogram h
        && width == h.width
        && Arrays.equals(first, h.first)
        && Arrays.equals(second, h.second);
  }

  @Override
  public int hashCode() {
    return (Double.hashCode(width) * 31 + Arrays.hashCode(first)) * 31 + Arrays.hashCode(second);
  }

  @Override
  public String toString() {
    return "Histogram[width="
        + width
        + ", first="
        + Arrays.toString(first)
        + ", second="
        + Arrays.toString(second)
        + "]";
  }

  private static String number(double v) {
    return v == Math.rint(v)
        ? Long.toString((long) v)
        : String.format(Locale.ROOT, "%.2f", v).replaceAll("0+$", "");
  }
}
