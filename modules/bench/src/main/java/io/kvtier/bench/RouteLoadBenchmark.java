package io.kvtier.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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
 * The routing benchmark's load: two workloads over HTTP against one URL (a {@code kvtier route}
 * over replicas, or one {@code kvtier serve}), each request a streamed call with usage; {@code
 * scripts/route-bench.sh} runs it against prefix-aware routing, round robin and one replica with
 * 4x the memory (the ideal) and then compares them ({@code --compare}). docs/PERFORMANCE.md has
 * the figures.
 *
 * <ul>
 *   <li>{@code multiturn}: {@code --conversations} concurrent chats (64) of {@code --turns} turns
 *       (4), each opened by its own {@code --first}-byte message (96: a document or persona that
 *       no other chat shares), then {@code --question}-byte questions (16) and the kept answers
 *       ({@code --answer} tokens, 8), on {@code /v1/chat/completions}.
 *   <li>{@code shared-prefix}: {@code --requests} (256) {@code /v1/completions} calls from {@code
 *       --clients} concurrent clients (32), each a {@code --document}-byte document (160) drawn
 *       uniformly from {@code --documents} (64) and a {@code --question}-byte question of its own.
 * </ul>
 *
 * <p>Hit rate is {@code cached_tokens / prompt_tokens} of the responses' usage; TTFT is from
 * sending a request to its first chunk with text (HdrHistogram, 3 digits).
 *
 * <p>Run: {@code --url URL --label NAME --results FILE} appends one line per workload to FILE;
 * {@code --compare FILE} prints the table and the ratios to {@code ideal} and {@code
 * round-robin}. {@code --seed} (1) fixes the workloads; every label gets the same requests.
 */
public final class RouteLoadBenchmark {
  private static final ObjectMapper JSON = new ObjectMapper();

  private RouteLoadBenchmark() {}

  /** One workload's figures against one target. */
  record Result(
      String label,
      String workload,
      long requests,
      long failed,
      double seconds,
      long promptTokens,
      long cachedTokens,
      double p50Millis,
      double p99Millis) {

    double hitRate() {
      return cachedTokens / (double) Math.max(1, promptTokens);
    }

    String line() {
      return String.join(
          " ",
          label,
          workload,
          Long.toString(requests),
          Long.toString(failed),
          Double.toString(seconds),
          Long.toString(promptTokens),
          Long.toString(cachedTokens),
          Double.toString(p50Millis),
          Double.toString(p99Millis));
    }

    static Result parse(String line) {
      String[] f = line.strip().split(" ");
      return new Result(
          f[0],
          f[1],
          Long.parseLong(f[2]),
          Long.parseLong(f[3]),
          Double.parseDouble(f[4]),
          Long.parseLong(f[5]),
          Long.parseLong(f[6]),
          Double.parseDouble(f[7]),
          Double.parseDouble(f[8]));
    }
  }

  /**
   * Runs one target, or compares the results.
   *
   * @param args the options above
   * @throws Exception if the target cannot be reached
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    o.put("conversations", "64");
    o.put("turns", "4");
    o.put("first", "96");
    o.put("question", "16");
    o.put("answer", "8");
    o.put("requests", "256");
    o.put("clients", "32");
    o.put("documents", "64");
    o.put("document", "160");
    o.put("seed", "1");
    o.put("model", "kvtier-tiny");
    o.put("workloads", "multiturn,shared-prefix");
    o = LoadOptions.parse(args, o);
    if (o.containsKey("compare")) {
      compare(Files.readAllLines(Path.of(o.get("compare"))).stream().map(Result::parse).toList());
      return;
    }
    LoadOptions.requireTarget(o);
    try (HttpClient client = LoadOptions.client()) {
      for (String workload : o.get("workloads").split(",")) {
        Result r =
            switch (workload) {
              case "multiturn" -> multiturn(client, o);
              case "shared-prefix" -> sharedPrefix(client, o);
              default ->
                  throw new IllegalArgumentException(
                      "--workloads " + workload + ": use multiturn and/or shared-prefix");
            };
        print(r);
        LoadOptions.append(o, r.line());
      }
    }
  }

  private static void print(Result r) {
    System.out.printf(
        "%-12s %-13s %4d requests (%d failed) in %6.1f s; hit rate %5.1f%% (%d of %d prompt"
            + " tokens cached); TTFT p50 %7.1f ms, p99 %7.1f ms%n",
        r.label(),
        r.workload(),
        r.requests(),
        r.failed(),
        r.seconds(),
        100 * r.hitRate(),
        r.cachedTokens(),
        r.promptTokens(),
        r.p50Millis(),
        r.p99Millis());
  }

  private static void compare(List<Result> results) {
    System.out.println();
    System.out.println(
        "| workload | target | hit rate | of ideal | x round-robin | TTFT p50 ms | p99 ms"
            + " | failed |");
    System.out.println("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (String workload : results.stream().map(Result::workload).distinct().toList()) {
      Result ideal = find(results, "ideal", workload);
      Result roundRobin = find(results, "round-robin", workload);
      for (Result r : results) {
        if (!r.workload().equals(workload)) {
          continue;
        }
        System.out.printf(
            "| %s | %s | %.1f%% | %s | %s | %.1f | %.1f | %d of %d |%n",
            workload,
            r.label(),
            100 * r.hitRate(),
            ideal == null ? "-" : String.format("%.2f", r.hitRate() / ideal.hitRate()),
            roundRobin == null
                ? "-"
                : String.format("%.2fx", r.hitRate() / Math.max(1e-9, roundRobin.hitRate())),
            r.p50Millis(),
            r.p99Millis(),
            r.failed(),
            r.requests());
      }
    }
  }

  private static Result find(List<Result> results, String label, String workload) {
    return results.stream()
        .filter(r -> r.label().equals(label) && r.workload().equals(workload))
        .findFirst()
        .orElse(null);
  }

  /** The counters one workload's requests add to. */
  private static final class Tally {
    final Histogram ttftMicros = new Histogram(3_600_000_000L, 3);
    final AtomicLong requests = new AtomicLong();
    final TurnFailures failures = new TurnFailures();
    final AtomicLong prompt = new AtomicLong();
    final AtomicLong cached = new AtomicLong();
    final long start = System.nanoTime();

    /** Counts a call; returns it, or null if it failed. */
    StreamedTurn add(StreamedTurn t) {
      requests.incrementAndGet();
      if (t.failed()) {
        failures.add(t.failure());
        return null;
      }
      synchronized (ttftMicros) {
        ttftMicros.recordValue(Math.max(1, t.ttftNanos() / 1000));
      }
      prompt.addAndGet(t.promptTokens());
      cached.addAndGet(t.cachedTokens());
      return t;
    }

    Result result(String label, String workload) {
      return new Result(
          label,
          workload,
          requests.get(),
          failures.total(),
          (System.nanoTime() - start) / 1e9,
          prompt.get(),
          cached.get(),
          ttftMicros.getValueAtPercentile(50) / 1000.0,
          ttftMicros.getValueAtPercentile(99) / 1000.0);
    }
  }

  private static Result multiturn(HttpClient client, Map<String, String> o) throws Exception {
    int conversations = Integer.parseInt(o.get("conversations"));
    int turns = Integer.parseInt(o.get("turns"));
    int answer = Integer.parseInt(o.get("answer"));
    Random random = new Random(Long.parseLong(o.get("seed")));
    List<String> firsts = new ArrayList<>();
    List<List<String>> questions = new ArrayList<>();
    for (int c = 0; c < conversations; c++) {
      firsts.add(StreamedTurn.text(random, Integer.parseInt(o.get("first"))));
      List<String> q = new ArrayList<>();
      for (int t = 0; t < turns; t++) {
        q.add(StreamedTurn.text(random, Integer.parseInt(o.get("question"))));
      }
      questions.add(q);
    }
    URI endpoint = URI.create(o.get("url")).resolve("/v1/chat/completions");
    Tally tally = new Tally();
    try (ExecutorService chats = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<?>> all = new ArrayList<>();
      for (int c = 0; c < conversations; c++) {
        String first = firsts.get(c);
        List<String> q = questions.get(c);
        all.add(
            chats.submit(
                () -> {
                  ArrayNode messages = JSON.createArrayNode();
                  messages.addObject().put("role", "system").put("content", first);
                  for (String question : q) {
                    messages.addObject().put("role", "user").put("content", question);
                    ObjectNode body =
                        JSON.createObjectNode()
                            .put("model", o.get("model"))
                            .put("max_completion_tokens", answer)
                            .put("stream", true);
                    body.set("messages", messages);
                    body.putObject("stream_options").put("include_usage", true);
                    StreamedTurn turn =
                        tally.add(
                            StreamedTurn.send(client, endpoint, JSON.writeValueAsString(body)));
                    if (turn == null) {
                      return null;
                    }
                    messages
                        .addObject()
                        .put("role", "assistant")
                        .put("content", StreamedTurn.kept(turn.text(), answer));
                  }
                  return null;
                }));
      }
      for (Future<?> f : all) {
        f.get();
      }
    }
    System.out.print(tally.failures.describe("  " + o.get("label") + " multiturn failed: "));
    return tally.result(o.get("label"), "multiturn");
  }

  private static Result sharedPrefix(HttpClient client, Map<String, String> o) throws Exception {
    int requests = Integer.parseInt(o.get("requests"));
    Random random = new Random(Long.parseLong(o.get("seed")) + 1);
    List<String> documents = new ArrayList<>();
    for (int d = 0; d < Integer.parseInt(o.get("documents")); d++) {
      documents.add(StreamedTurn.text(random, Integer.parseInt(o.get("document"))));
    }
    List<String> prompts = new ArrayList<>();
    for (int i = 0; i < requests; i++) {
      prompts.add(
          documents.get(random.nextInt(documents.size()))
              + "\nQ: "
              + StreamedTurn.text(random, Integer.parseInt(o.get("question"))));
    }
    URI endpoint = URI.create(o.get("url")).resolve("/v1/completions");
    Tally tally = new Tally();
    Semaphore clients = new Semaphore(Integer.parseInt(o.get("clients")));
    try (ExecutorService calls = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<?>> all = new ArrayList<>();
      for (String prompt : prompts) {
        clients.acquire();
        all.add(
            calls.submit(
                () -> {
                  try {
                    ObjectNode body =
                        JSON.createObjectNode()
                            .put("model", o.get("model"))
                            .put("prompt", prompt)
                            .put("max_tokens", Integer.parseInt(o.get("answer")))
                            .put("stream", true);
                    body.putObject("stream_options").put("include_usage", true);
                    tally.add(StreamedTurn.send(client, endpoint, JSON.writeValueAsString(body)));
                  } finally {
                    clients.release();
                  }
                  return null;
                }));
      }
      for (Future<?> f : all) {
        f.get();
      }
    }
    System.out.print(tally.failures.describe("  " + o.get("label") + " shared-prefix failed: "));
    return tally.result(o.get("label"), "shared-prefix");
  }
}
