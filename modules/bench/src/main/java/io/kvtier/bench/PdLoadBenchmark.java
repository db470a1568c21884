package io.kvtier.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;

/**
 * The prefill/decode disaggregation benchmark's load (issue 34): one mixed load against one URL
 * (a {@code kvtier route} over prefill and decode replicas, or over unified ones), run by {@code
 * scripts/pd-bench.sh} against both and compared ({@code --compare}). docs/PERFORMANCE.md has
 * the figures.
 *
 * <p>The load: {@code --long} requests (8) of {@code --long-prompt} tokens (768) that answer
 * {@code --long-answer} tokens (4), beside {@code --short} requests (8) of {@code --short-prompt}
 * tokens (32) that answer {@code --short-answer} tokens (64), in one order shuffled by {@code
 * --seed} (1), from {@code --clients} concurrent clients (4); each a streamed {@code
 * /v1/completions} call with usage. Every prompt is its own array of token ids (each from 32 to
 * 126: a byte of the tiny model's text, a token of any GGUF vocabulary), so no prompt shares a
 * cached prefix with another: the load weighs prefill against decode, not the cache.
 *
 * <p>Figures: TTFT p50 and p99 of each kind (from sending to the first chunk with text), the
 * inter-token latency p50 and p99 over every gap between two chunks with text of every request
 * (what a long prefill beside a stream stalls), and the throughput, output tokens and requests a
 * second over the run. HdrHistogram, 3 digits.
 *
 * <p>Run: {@code --url URL --label NAME --results FILE} appends one line to FILE; {@code
 * --compare FILE} prints the table, each label's ratio to the first.
 */
public final class PdLoadBenchmark {
  private static final ObjectMapper JSON = new ObjectMapper();

  private PdLoadBenchmark() {}

  /** One target's figures; latencies in milliseconds. */
  record Result(
      String label,
      long requests,
      long failed,
      double seconds,
      long outputTokens,
      double ttftLongP50,
      double ttftLongP99,
      double ttftShortP50,
      double ttftShortP99,
      double itlP50,
      double itlP99) {

    String line() {
      return String.join(
          " ",
          label,
          Long.toString(requests),
          Long.toString(failed),
          Double.toString(seconds),
          Long.toString(outputTokens),
          Double.toString(ttftLongP50),
          Double.toString(ttftLongP99),
          Double.toString(ttftShortP50),
          Double.toString(ttftShortP99),
          Double.toString(itlP50),
          Double.toString(itlP99));
    }

    static Result parse(String line) {
      String[] f = line.strip().split(" ");
      return new Result(
          f[0],
          Long.parseLong(f[1]),
          Long.parseLong(f[2]),
          Double.parseDouble(f[3]),
          Long.parseLong(f[4]),
          Double.parseDouble(f[5]),
          Double.parseDouble(f[6]),
          Double.parseDouble(f[7]),
          Double.parseDouble(f[8]),
          Double.parseDouble(f[9]),
          Double.parseDouble(f[10]));
    }

    double tokensPerSecond() {
      return outputTokens / Math.max(1e-9, seconds);
    }

    double requestsPerSecond() {
      return (requests - failed) / Math.max(1e-9, seconds);
    }
  }

  /** One request of the load: its prompt's ids and the tokens it asks for. */
  private record Call(boolean isLong, int[] prompt, int answer) {}

  /**
   * Runs one target, or compares the results.
   *
   * @param args the options above
   * @throws Exception if the target cannot be reached
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    o.put("long", "8");
    o.put("long-prompt", "768");
    o.put("long-answer", "4");
    o.put("short", "8");
    o.put("short-prompt", "32");
    o.put("short-answer", "64");
    o.put("clients", "4");
    o.put("seed", "1");
    o.put("model", "kvtier-tiny");
    o = LoadOptions.parse(args, o);
    if (o.containsKey("compare")) {
      compare(Files.readAllLines(Path.of(o.get("compare"))).stream().map(Result::parse).toList());
      return;
    }
    LoadOptions.requireTarget(o);
    Result r;
    try (HttpClient client = LoadOptions.client()) {
      r = run(client, o);
    }
    print(r);
    LoadOptions.append(o, r.line());
  }

  /** The load's calls, in the order they are sent: the same for every label of one seed. */
  static List<Call> calls(Map<String, String> o) {
    Random random = new Random(Long.parseLong(o.get("seed")));
    List<Call> calls = new ArrayList<>();
    for (int i = 0; i < Integer.parseInt(o.get("long")); i++) {
      calls.add(
          new Call(
              true,
              ids(random, Integer.parseInt(o.get("long-prompt"))),
              Integer.parseInt(o.get("long-answer"))));
    }
    for (int i = 0; i < Integer.parseInt(o.get("short")); i++) {
      calls.add(
          new Call(
              false,
              ids(random, Integer.parseInt(o.get("short-prompt"))),
              Integer.parseInt(o.get("short-answer"))));
    }
    Collections.shuffle(calls, random);
    return calls;
  }

  private static int[] ids(Random random, int n) {
    int[] ids = new int[n];
    for (int i = 0; i < n; i++) {
      ids[i] = 32 + random.nextInt(95);
    }
    return ids;
  }

  private static Result run(HttpClient client, Map<String, String> o) throws Exception {
    List<Call> calls = calls(o);
    URI endpoint = URI.create(o.get("url")).resolve("/v1/completions");
    Histogram ttftLong = new Histogram(3_600_000_000L, 3);
    Histogram ttftShort = new Histogram(3_600_000_000L, 3);
    Histogram itl = new Histogram(3_600_000_000L, 3);
    AtomicLong output = new AtomicLong();
    TurnFailures failures = new TurnFailures();
    Semaphore clients = new Semaphore(Integer.parseInt(o.get("clients")));
    long start = System.nanoTime();
    try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<?>> all = new ArrayList<>();
      for (Call call : calls) {
        clients.acquire();
        all.add(
            pool.submit(
                () -> {
                  try {
                    ObjectNode body =
                        JSON.createObjectNode()
                            .put("model", o.get("model"))
                            .put("max_tokens", call.answer())
                            .put("temperature", 0)
                            .put("stream", true);
                    ArrayNode prompt = body.putArray("prompt");
                    for (int id : call.prompt()) {
                      prompt.add(id);
                    }
                    body.putObject("stream_options").put("include_usage", true);
                    StreamedTurn t =
                        StreamedTurn.send(client, endpoint, JSON.writeValueAsString(body));
                    if (t.failed()) {
                      failures.add(t.failure());
                      return null;
                    }
                    output.addAndGet(t.completionTokens());
                    Histogram ttft = call.isLong() ? ttftLong : ttftShort;
                    synchronized (ttft) {
                      ttft.recordValue(Math.max(1, t.ttftNanos() / 1000));
                    }
                    synchronized (itl) {
                      long[] at = t.tokenNanos();
                      for (int i = 1; i < at.length; i++) {
                        itl.recordValue(Math.max(1, (at[i] - at[i - 1]) / 1000));
                      }
                    }
                    return null;
                  } finally {
                    clients.release();
                  }
                }));
      }
      for (Future<?> f : all) {
        f.get();
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.print(failures.describe("  " + o.get("label") + " failed: "));
    return new Result(
        o.get("label"),
        calls.size(),
        failures.total(),
        seconds,
        output.get(),
        millis(ttftLong, 50),
        millis(ttftLong, 99),
        millis(ttftShort, 50),
        millis(ttftShort, 99),
        millis(itl, 50),
        millis(itl, 99));
  }

  private static double millis(Histogram h, double percentile) {
    return h.getTotalCount() == 0 ? 0 : h.getValueAtPercentile(percentile) / 1000.0;
  }

  private static void print(Result r) {
    System.out.printf(
        "%-10s %d requests (%d failed) in %.1f s: %.2f output tokens/s, %.3f requests/s; TTFT"
            + " long p50 %.1f ms p99 %.1f, short p50 %.1f p99 %.1f; ITL p50 %.1f ms p99 %.1f%n",
        r.label(),
        r.requests(),
        r.failed(),
        r.seconds(),
        r.tokensPerSecond(),
        r.requestsPerSecond(),
        r.ttftLongP50(),
        r.ttftLongP99(),
        r.ttftShortP50(),
        r.ttftShortP99(),
        r.itlP50(),
        r.itlP99());
  }

  private static void compare(List<Result> results) {
    if (results.isEmpty()) {
      return;
    }
    Result base = results.getFirst();
    System.out.println();
    System.out.println(
        "| target | output tok/s | req/s | TTFT long p50 / p99 ms | TTFT short p50 / p99 ms"
            + " | ITL p50 / p99 ms | failed |");
    System.out.println("| --- | --- | --- | --- | --- | --- | --- |");
    for (Result r : results) {
      System.out.printf(
          "| %s | %.2f | %.3f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %d of %d |%n",
          r.label(),
          r.tokensPerSecond(),
          r.requestsPerSecond(),
          r.ttftLongP50(),
          r.ttftLongP99(),
          r.ttftShortP50(),
          r.ttftShortP99(),
          r.itlP50(),
          r.itlP99(),
          r.failed(),
          r.requests());
    }
    for (Result r : results.subList(1, results.size())) {
      System.out.printf(
          "%s / %s: throughput %.2fx, TTFT long p50 %.2fx, short p50 %.2fx, ITL p50 %.2fx, p99"
              + " %.2fx%n",
          r.label(),
          base.label(),
          r.tokensPerSecond() / Math.max(1e-9, base.tokensPerSecond()),
          r.ttftLongP50() / Math.max(1e-9, base.ttftLongP50()),
          r.ttftShortP50() / Math.max(1e-9, base.ttftShortP50()),
          r.itlP50() / Math.max(1e-9, base.itlP50()),
          r.itlP99() / Math.max(1e-9, base.itlP99()));
    }
  }
}
