package io.kvtier.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;

/**
 * A load benchmark of {@code kvtier serve} over HTTP: many concurrent multi-turn chats, each turn
 * a streamed {@code /v1/chat/completions} call whose prompt is the whole conversation so far (a
 * shared system prompt, then the chat's earlier questions and answers), against a server with
 * the cache and one started with {@code --no-prefix-cache}, one after the other in one run.
 * Prints throughput and TTFT p50/p99 (HdrHistogram) of each and their ratios. {@code
 * scripts/serve-bench.sh} starts both servers and runs it; see docs/PERFORMANCE.md.
 *
 * <p>The model is {@code kvtier serve}'s tiny transformer (2 layers, 4 KV heads of 16 dimensions,
 * a 256-token context): prompts of up to ~210 tokens against 8-token answers, so prefill is most
 * of each request's work.
 *
 * <p>Arguments ({@code --name value}): {@code --cached URL}, {@code --uncached URL}, {@code
 * --conversations} (concurrent chats, 32), {@code --turns} (4), {@code --system} (bytes of the
 * shared system prompt, 100), {@code --question} (bytes per question, 16), {@code --answer}
 * (max_completion_tokens, 8), {@code --seed} (1), {@code --model} (kvtier-tiny).
 */
public final class ServeLoadBenchmark {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ServeLoadBenchmark() {}

  /** One server's figures. */
  record Result(
      long requests,
      TurnFailures failures,
      double seconds,
      long promptTokens,
      long cachedTokens,
      long completionTokens,
      Histogram ttftMicros) {
    long failed() {
      return failures.total();
    }

    double requestsPerSecond() {
      return requests / seconds;
    }

    double p(double percentile) {
      return ttftMicros.getValueAtPercentile(percentile) / 1000.0;
    }
  }

  /**
   * Runs the benchmark.
   *
   * @param args the options above
   * @throws Exception if a server cannot be reached
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    o.put("conversations", "32");
    o.put("turns", "4");
    o.put("system", "100");
    o.put("question", "16");
    o.put("answer", "8");
    o.put("seed", "1");
    o.put("model", "kvtier-tiny");
    o = LoadOptions.parse(args, o);
    if (!o.containsKey("cached") || !o.containsKey("uncached")) {
      throw new IllegalArgumentException(
          "give --cached URL and --uncached URL (servers with and without --no-prefix-cache)");
    }
    Result uncached = run(o.get("uncached"), o);
    Result cached = run(o.get("cached"), o);
    System.out.printf(
        "workload: %s concurrent chats x %s turns, system prompt %s bytes, questions %s bytes,"
            + " answers %s tokens%n",
        o.get("conversations"),
        o.get("turns"),
        o.get("system"),
        o.get("question"),
        o.get("answer"));
    print("no cache", uncached);
    print("cache   ", cached);
    System.out.printf(
        "ratio cache/no cache: throughput %.2fx, TTFT p50 %.2fx, TTFT p99 %.2fx%n",
        cached.requestsPerSecond() / uncached.requestsPerSecond(),
        cached.p(50) / uncached.p(50),
        cached.p(99) / uncached.p(99));
  }

  private static void print(String name, Result r) {
    System.out.printf(
        "%s: %d requests (%d failed) in %.1f s = %.2f req/s, %.0f generated tok/s; TTFT p50 %.1f"
            + " ms, p99 %.1f ms; cached %d of %d prompt tokens (%.0f%%)%n",
        name,
        r.requests(),
        r.failed(),
        r.seconds(),
        r.requestsPerSecond(),
        r.completionTokens() / r.seconds(),
        r.p(50),
        r.p(99),
        r.cachedTokens(),
        r.promptTokens(),
        100.0 * r.cachedTokens() / Math.max(1, r.promptTokens()));
    System.out.print(r.failures().describe("  failed: "));
  }

  private static Result run(String url, Map<String, String> o) throws Exception {
    int conversations = Integer.parseInt(o.get("conversations"));
    int turns = Integer.parseInt(o.get("turns"));
    Random random = new Random(Long.parseLong(o.get("seed")));
    String system = StreamedTurn.text(random, Integer.parseInt(o.get("system")));
    List<List<String>> questions = new ArrayList<>();
    for (int c = 0; c < conversations; c++) {
      List<String> q = new ArrayList<>();
      for (int t = 0; t < turns; t++) {
        q.add(StreamedTurn.text(random, Integer.parseInt(o.get("question"))));
      }
      questions.add(q);
    }
    Histogram ttft = new Histogram(3_600_000_000L, 3);
    AtomicLong requests = new AtomicLong();
    TurnFailures failures = new TurnFailures();
    AtomicLong prompt = new AtomicLong();
    AtomicLong cachedTokens = new AtomicLong();
    AtomicLong completion = new AtomicLong();
    URI endpoint = URI.create(url).resolve("/v1/chat/completions");
    long start = System.nanoTime();
    try (HttpClient client =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        ExecutorService chats = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<?>> all = new ArrayList<>();
      for (int c = 0; c < conversations; c++) {
        List<String> q = questions.get(c);
        all.add(
            chats.submit(
                () -> {
                  ArrayNode messages = JSON.createArrayNode();
                  messages.addObject().put("role", "system").put("content", system);
                  for (String question : q) {
                    messages.addObject().put("role", "user").put("content", question);
                    ObjectNode body =
                        JSON.createObjectNode()
                            .put("model", o.get("model"))
                            .put("max_completion_tokens", Integer.parseInt(o.get("answer")))
                            .put("stream", true);
                    body.set("messages", messages);
                    body.putObject("stream_options").put("include_usage", true);
                    StreamedTurn turn =
                        StreamedTurn.send(client, endpoint, JSON.writeValueAsString(body));
                    requests.incrementAndGet();
                    if (turn.failed()) {
                      failures.add(turn.failure());
                      return null;
                    }
                    synchronized (ttft) {
                      ttft.recordValue(Math.max(1, turn.ttftNanos() / 1000));
                    }
                    prompt.addAndGet(turn.promptTokens());
                    cachedTokens.addAndGet(turn.cachedTokens());
                    completion.addAndGet(turn.completionTokens());
                    messages
                        .addObject()
                        .put("role", "assistant")
                        .put(
                            "content",
                            StreamedTurn.kept(turn.text(), Integer.parseInt(o.get("answer"))));
                  }
                  return null;
                }));
      }
      for (Future<?> f : all) {
        f.get();
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    return new Result(
        requests.get(),
        failures,
        seconds,
        prompt.get(),
        cachedTokens.get(),
        completion.get(),
        ttft);
  }
}
