package io.kvtier.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The request-level meters of {@code kvtier serve}, named after vLLM's (its {@code vllm:} prefix
 * becomes {@code kvtier_}), measured by the HTTP server as the engine's events reach it.
 *
 * <table>
 *   <caption>Meters (Prometheus names)</caption>
 *   <tr><th>name</th><th>type</th><th>what</th></tr>
 *   <tr><td>kvtier_request_success_total{finished_reason=stop|length}</td><td>counter</td>
 *       <td>requests that ended with an answer, by why the text ended</td></tr>
 *   <tr><td>kvtier_request_failure_total{reason=error|abort}</td><td>counter</td>
 *       <td>requests the engine failed, and requests given up (timeout, client gone)</td></tr>
 *   <tr><td>kvtier_prompt_tokens_total, kvtier_generation_tokens_total</td><td>counter</td>
 *       <td>prompt tokens submitted, tokens generated</td></tr>
 *   <tr><td>kvtier_time_to_first_token_seconds</td><td>histogram</td>
 *       <td>from the request's arrival to its first generated token</td></tr>
 *   <tr><td>kvtier_inter_token_latency_seconds</td><td>histogram</td>
 *       <td>between two generated tokens of one request</td></tr>
 *   <tr><td>kvtier_e2e_request_latency_seconds</td><td>histogram</td>
 *       <td>from the request's arrival to its last token</td></tr>
 *   <tr><td>kvtier_num_requests_running, kvtier_num_requests_waiting</td><td>gauge</td>
 *       <td>generations admitted and advancing, and those queued for admission</td></tr>
 *   <tr><td>kvtier_pd_requests_total{role_side=prefill|decode}</td><td>counter</td>
 *       <td>prompts served as the prefill side (published) or the decode side (with a handle)
 *       of a transfer between replicas</td></tr>
 *   <tr><td>kvtier_pd_transfer_pages_total{direction=published|fetched|recomputed}</td>
 *       <td>counter</td><td>prompt pages published to the L3 store, fetched from it for a
 *       handle, and of a handle found in no tier and computed</td></tr>
 *   <tr><td>kvtier_pd_transfer_bytes_total{direction=published|fetched}</td><td>counter</td>
 *       <td>the KV bytes of those pages, over every rank</td></tr>
 *   <tr><td>kvtier_pd_transfer_seconds{role_side=prefill|decode}</td><td>histogram</td>
 *       <td>prefill: from the end of the prompt to the publish's agreed end; decode: from the
 *       request's arrival to its admission (the wait for the handle's pages)</td></tr>
 * </table>
 */
public final class ServeMeters {
  private final MeterRegistry registry;
  private final AtomicInteger running = new AtomicInteger();
  private final AtomicInteger waiting = new AtomicInteger();
  private final Counter promptTokens;
  private final Counter generationTokens;
  private final Timer timeToFirstToken;
  private final Timer interTokenLatency;
  private final Timer endToEnd;

  private ServeMeters(MeterRegistry registry) {
    this.registry = registry;
    Gauge.builder("kvtier.num.requests.running", running, AtomicInteger::get)
        .description("Requests the engine is generating for now (admitted, not yet ended)")
        .strongReference(true)
        .register(registry);
    Gauge.builder("kvtier.num.requests.waiting", waiting, AtomicInteger::get)
        .description("Requests queued for admission: their KV does not fit, or the batch is full")
        .strongReference(true)
        .register(registry);
    promptTokens =
        Counter.builder("kvtier.prompt.tokens")
            .description("Prompt tokens of the requests submitted to the engine")
            .register(registry);
    generationTokens =
        Counter.builder("kvtier.generation.tokens")
            .description("Tokens generated and sent to clients")
            .register(registry);
    timeToFirstToken =
        timer("kvtier.time.to.first.token", "Time from a request's arrival to its first token");
    interTokenLatency =
        timer("kvtier.inter.token.latency", "Time between two generated tokens of one request");
    endToEnd =
        timer("kvtier.e2e.request.latency", "Time from a request's arrival to its last token");
  }

  private Timer timer(String name, String description) {
    return Timer.builder(name)
        .description(description)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1))
        .maximumExpectedValue(Duration.ofMinutes(2))
        .register(registry);
  }

  /**
   * Registers the meters.
   *
   * @param registry where
   * @return the meters to record into
   */
  public static ServeMeters register(MeterRegistry registry) {
    return new ServeMeters(Objects.requireNonNull(registry, "registry"));
  }

  /**
   * A prompt's publish ended (the prefill side of a transfer).
   *
   * @param pages pages published
   * @param bytes their KV bytes over every rank
   * @param nanos from the end of the prompt to the publish's end
   */
  public void pdPublished(int pages, long bytes, long nanos) {
    pd("prefill", nanos);
    pdPages("published", pages);
    pdBytes("published", bytes);
  }

  /**
   * A prompt with a handle was admitted (the decode side of a transfer).
   *
   * @param fetched pages fetched from the L3 store
   * @param recomputed pages of the handle found in no tier
   * @param bytes the fetched pages' KV bytes over every rank
   * @param nanos from the request's arrival to its admission
   */
  public void pdAwaited(int fetched, int recomputed, long bytes, long nanos) {
    pd("decode", nanos);
    pdPages("fetched", fetched);
    pdPages("recomputed", recomputed);
    pdBytes("fetched", bytes);
  }

  private void pd(String side, long nanos) {
    Counter.builder("kvtier.pd.requests")
        .description("Prompts served as one side of a prefill/decode transfer between replicas")
        .tag("role_side", side)
        .register(registry)
        .increment();
    Timer.builder("kvtier.pd.transfer")
        .description(
            "Prefill: end of the prompt to the publish's agreed end; decode: arrival to"
                + " admission, the wait for the handle's pages")
        .tag("role_side", side)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1))
        .maximumExpectedValue(Duration.ofMinutes(2))
        .register(registry)
        .record(Math.max(0, nanos), java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  private void pdPages(String direction, long pages) {
    Counter.builder("kvtier.pd.transfer.pages")
        .description("Prompt pages of prefill/decode transfers: published, fetched, recomputed")
        .tag("direction", direction)
        .register(registry)
        .increment(pages);
  }

  private void pdBytes(String direction, long bytes) {
    Counter.builder("kvtier.pd.transfer.bytes")
        .description("KV bytes of prefill/decode transfers over every rank: published, fetched")
        .tag("direction", direction)
        .register(registry)
        .increment(bytes);
  }

  /** A generation was handed to the engine. */
  public void submitted() {
    waiting.incrementAndGet();
  }

  /** The engine refused a generation at once (its queue was full). */
  public void refused() {
    waiting.decrementAndGet();
  }

  /** A generation was admitted: it runs now. */
  public void admitted() {
    waiting.decrementAndGet();
    running.incrementAndGet();
  }

  /**
   * A generation ended.
   *
   * @param wasAdmitted whether it had been admitted (else it ended while waiting)
   */
  public void ended(boolean wasAdmitted) {
    (wasAdmitted ? running : waiting).decrementAndGet();
  }

  /**
   * Prompt tokens submitted.
   *
   * @param tokens how many
   */
  public void promptTokens(int tokens) {
    promptTokens.increment(tokens);
  }

  /**
   * One generated token.
   *
   * @param sinceNanos the request's arrival (first token) or the previous token
   * @param nanos when this one came
   * @param first whether it is the request's first
   */
  public void token(long sinceNanos, long nanos, boolean first) {
    generationTokens.increment();
    (first ? timeToFirstToken : interTokenLatency).record(Duration.ofNanos(nanos - sinceNanos));
  }

  /**
   * A request answered.
   *
   * @param finishReason {@code stop} or {@code length}
   * @param startNanos its arrival
   * @param endNanos its last token
   */
  public void finished(String finishReason, long startNanos, long endNanos) {
    endToEnd.record(Duration.ofNanos(endNanos - startNanos));
    Counter.builder("kvtier.request.success")
        .description(
            "Requests answered, by why their text ended (stop: a stop sequence or the"
                + " end marker; length: max_tokens reached)")
        .tag("finished_reason", finishReason)
        .register(registry)
        .increment();
  }

  /** A request the engine failed (rejected, load failed, rank group failed). */
  public void failed() {
    failure("error");
  }

  /** A request given up: its deadline passed, or its client went away. */
  public void aborted() {
    failure("abort");
  }

  private void failure(String reason) {
    Counter.builder("kvtier.request.failure")
        .description(
            "Requests that got no complete answer: error (the engine failed them) or"
                + " abort (timed out, or the client went away)")
        .tag("reason", reason)
        .register(registry)
        .increment();
  }

  /**
   * Generations running now.
   *
   * @return the count
   */
  public int running() {
    return running.get();
  }

  /**
   * Generations waiting for admission now.
   *
   * @return the count
   */
  public int waiting() {
    return waiting.get();
  }
}
