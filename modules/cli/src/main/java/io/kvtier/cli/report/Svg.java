package io.kvtier.cli.report;

import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Small inline SVG charts: line charts and grouped bar charts, well-formed XML with every text
 * escaped. Each series is drawn as an element with {@code class="series"} and a {@code
 * data-series} attribute naming it, so a test can find it.
 *
 * <p>A line gets a circle per point only up to {@link #MAX_MARKS} points: a timeline of a
 * thousand samples would draw a thousand overlapping circles per line.
 *
 * <p>Every chart shows its title above the plot ({@code class="chart-title"}), and its axes tick
 * at round values ({@code class="tick-x"}, {@code class="tick-y"}): multiples of 1, 2 or 5 times
 * a power of ten ({@link #roundStep}), never the quarters of an odd range (104, 207, 311).
 */
final class Svg {
  static final int WIDTH = 640;
  static final int HEIGHT = 300;

  /** The most points of a line that still get a circle each. */
  static final int MAX_MARKS = 60;

  private static final int LEFT = 64;
  private static final int RIGHT = 140;

  /** Room above the plot for the chart's visible title. */
  private static final int TOP = 40;

  private static final int BOTTOM = 48;

  private Svg() {}

  /** One line of a line chart, or one colour of a bar chart. */
  record Series(String name, String color, double[] values) {
    Series {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(color, "color");
      values = values.clone();
      for (double v : values) {
        if (!Double.isFinite(v)) {
          throw new IllegalArgumentException("series " + name + " has a non-finite value " + v);
        }
      }
    }
  }

  /**
   * A line chart of series over the same x values.
   *
   * @param id the chart's id attribute
   * @param title the accessible title
   * @param xLabel the x axis label
   * @param yLabel the y axis label
   * @param x the x values, ascending
   * @param yMax the top of the y axis, or 0 to fit the data
   * @param series the lines, each with one value per x
   */
  static String lines(
      String id,
      String title,
      String xLabel,
      String yLabel,
      double[] x,
      double yMax,
      List<Series> series) {
    double xMin = x.length == 0 ? 0 : x[0];
    double xMax = x.length == 0 ? 1 : x[x.length - 1];
    if (xMax <= xMin) {
      xMax = xMin + 1;
    }
    double top = yMax > 0 ? yMax : niceMax(series);
    StringBuilder s = open(id, title);
    axes(s, xLabel, yLabel, xMin, xMax, top, true);
    int i = 0;
    for (Series line : series) {
      if (line.values().length != x.length) {
        throw new IllegalArgumentException(
            "series "
                + line.name()
                + " has "
                + line.values().length
                + " values for "
                + x.length
                + " x values");
      }
      StringBuilder points = new StringBuilder();
      StringBuilder marks = new StringBuilder();
      for (int k = 0; k < x.length; k++) {
        double px = px(x[k], xMin, xMax);
        double py = py(line.values()[k], top);
        points.append(k == 0 ? "" : " ").append(f(px)).append(',').append(f(py));
        if (x.length <= MAX_MARKS) {
          marks.append(
              String.format(
                  Locale.ROOT,
                  "<circle class=\"mark\" cx=\"%s\" cy=\"%s\" r=\"3\" fill=\"%s\"/>",
                  f(px),
                  f(py),
                  escape(line.color())));
        }
      }
      s.append("<g class=\"series\" data-series=\"").append(escape(line.name())).append("\">");
      s.append("<polyline fill=\"none\" stroke-width=\"2\" stroke=\"")
          .append(escape(line.color()))
          .append("\" points=\"")
          .append(points)
          .append("\"/>");
      s.append(marks).append("</g>");
      legend(s, i++, line);
    }
    return s.append("</svg>").toString();
  }

  /**
   * A grouped bar chart: one group per category, one bar per series in each group.
   *
   * @param id the chart's id attribute
   * @param title the accessible title
   * @param xLabel the x axis label
   * @param yLabel the y axis label
   * @param categories the group labels
   * @param series the bar colours, each with one value per category
   */
  static String bars(
      String id,
      String title,
      String xLabel,
      String yLabel,
      List<String> categories,
      List<Series> series) {
    double top = niceMax(series);
    StringBuilder s = open(id, title);
    axes(s, xLabel, yLabel, 0, 1, top, false);
    int n = Math.max(1, categories.size());
    double group = (double) (WIDTH - LEFT - RIGHT) / n;
    double bar = group * 0.8 / Math.max(1, series.size());
    for (int c = 0; c < categories.size(); c++) {
      double cx = LEFT + group * (c + 0.5);
      s.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%s\" y=\"%d\" text-anchor=\"middle\" font-size=\"10\">%s</text>",
              f(cx),
              HEIGHT - BOTTOM + 14,
              escape(categories.get(c))));
    }
    int i = 0;
    for (Series b : series) {
      if (b.values().length != categories.size()) {
        throw new IllegalArgumentException(
            "series "
                + b.name()
                + " has "
                + b.values().length
                + " values for "
                + categories.size()
                + " categories");
      }
      s.append("<g class=\"series\" data-series=\"").append(escape(b.name())).append("\">");
      for (int c = 0; c < categories.size(); c++) {
        double x0 = LEFT + group * c + group * 0.1 + bar * i;
        double y = py(b.values()[c], top);
        s.append(
            String.format(
                Locale.ROOT,
                "<rect class=\"mark\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\">"
                    + "<title>%s: %s</title></rect>",
                f(x0),
                f(y),
                f(bar),
                f(HEIGHT - BOTTOM - y),
                escape(b.color()),
                escape(b.name() + " " + categories.get(c)),
                f(b.values()[c])));
      }
      s.append("</g>");
      legend(s, i++, b);
    }
    return s.append("</svg>").toString();
  }

  /**
   * Escapes text for XML content and attribute values.
   *
   * @param text any text
   * @return the escaped text
   */
  static String escape(String text) {
    StringBuilder s = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '&' -> s.append("&amp;");
        case '<' -> s.append("&lt;");
        case '>' -> s.append("&gt;");
        case '"' -> s.append("&quot;");
        case '\'' -> s.append("&#39;");
        default -> {
          if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
            s.append(' ');
          } else {
            s.append(c);
          }
        }
      }
    }
    return s.toString();
  }

  private static StringBuilder open(String id, String title) {
    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" width=\"%d\" height=\"%d\""
                + " viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\"><title>%s</title>",
            escape(id),
            WIDTH,
            HEIGHT,
            WIDTH,
            HEIGHT,
            escape(title),
            escape(title)));
    s.append(
        String.format(
            Locale.ROOT,
            "<text class=\"chart-title\" x=\"%d\" y=\"22\" font-size=\"14\""
                + " font-weight=\"bold\">%s</text>",
            LEFT,
            escape(title)));
    return s;
  }

  private static void axes(
      StringBuilder s,
      String xLabel,
      String yLabel,
      double xMin,
      double xMax,
      double top,
      boolean xTicks) {
    int x0 = LEFT;
    int x1 = WIDTH - RIGHT;
    int y0 = HEIGHT - BOTTOM;
    s.append(
        String.format(
            Locale.ROOT,
            "<g class=\"axes\" stroke=\"#888\">"
                + "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
                + "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/></g>",
            x0,
            y0,
            x1,
            y0,
            x0,
            TOP,
            x0,
            y0));
    double yStep = roundStep(top);
    // Integer multiples of the step: a sum of steps would drift off the round values.
    for (long k = 0; k * yStep <= top * (1 + 1e-9); k++) {
      double v = k * yStep;
      double y = py(v, top);
      s.append(
          String.format(
              Locale.ROOT,
              "<line x1=\"%d\" y1=\"%s\" x2=\"%d\" y2=\"%s\" stroke=\"#eee\"/>"
                  + "<text class=\"tick-y\" x=\"%d\" y=\"%s\" text-anchor=\"end\""
                  + " font-size=\"10\">%s</text>",
              x0,
              f(y),
              x1,
              f(y),
              x0 - 4,
              f(y + 3),
              escape(label(v))));
    }
    if (xTicks) {
      double xStep = roundStep(xMax - xMin);
      for (long k = (long) Math.ceil(xMin / xStep - 1e-9);
          k * xStep <= xMax + 1e-9 * Math.abs(xMax);
          k++) {
        double xv = k * xStep;
        s.append(
            String.format(
                Locale.ROOT,
                "<text class=\"tick-x\" x=\"%s\" y=\"%d\" text-anchor=\"middle\""
                    + " font-size=\"10\">%s</text>",
                f(px(xv, xMin, xMax)),
                y0 + 14,
                escape(label(xv))));
      }
    }
    s.append(
        String.format(
            Locale.ROOT,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\">%s</text>",
            (x0 + x1) / 2,
            HEIGHT - 10,
            escape(xLabel)));
    s.append(
        String.format(
            Locale.ROOT,
            "<text x=\"12\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\""
                + " transform=\"rotate(-90 12 %d)\">%s</text>",
            (TOP + y0) / 2,
            (TOP + y0) / 2,
            escape(yLabel)));
  }

  private static void legend(StringBuilder s, int i, Series series) {
    int x = WIDTH - RIGHT + 12;
    int y = TOP + 8 + 18 * i;
    s.append(
        String.format(
            Locale.ROOT,
            "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                + "<text class=\"legend\" x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>",
            x,
            y - 10,
            escape(series.color()),
            x + 16,
            y,
            escape(series.name())));
  }

  /**
   * The step between the ticks of an axis that spans {@code span}: the smallest of 1, 2 or 5
   * times a power of ten that gives at most 5 intervals, so that every tick is a round number.
   *
   * @param span the axis's length in data units, positive
   * @return the step
   */
  static double roundStep(double span) {
    if (!(span > 0) || Double.isInfinite(span)) {
      return 1;
    }
    double raw = span / 5;
    double magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    for (double m : new double[] {1, 2, 5}) {
      if (m * magnitude >= raw) {
        return m * magnitude;
      }
    }
    return 10 * magnitude;
  }

  private static double niceMax(List<Series> series) {
    double max = 0;
    for (Series s : series) {
      for (double v : s.values()) {
        max = Math.max(max, v);
      }
    }
    if (max <= 0) {
      return 1;
    }
    double magnitude = Math.pow(10, Math.floor(Math.log10(max)));
    for (double step : new double[] {1, 2, 2.5, 5, 10}) {
      if (step * magnitude >= max) {
        return step * magnitude;
      }
    }
    return 10 * magnitude;
  }

  /** The horizontal position of {@code x} on an axis from {@code xMin} to {@code xMax}. */
  static double px(double x, double xMin, double xMax) {
    return LEFT + (WIDTH - LEFT - RIGHT) * (x - xMin) / (xMax - xMin);
  }

  /** The vertical position of {@code y} on an axis from 0 to {@code top}, clamped to it. */
  static double py(double y, double top) {
    double clamped = Math.max(0, Math.min(y, top));
    return HEIGHT - BOTTOM - (HEIGHT - BOTTOM - TOP) * clamped / top;
  }

  private static String label(double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e12) {
      return Long.toString((long) v);
    }
    return String.format(Locale.ROOT, Math.abs(v) >= 10 ? "%.0f" : "%.2f", v);
  }

  private static String f(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }
}
