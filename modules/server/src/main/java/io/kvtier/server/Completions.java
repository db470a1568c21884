package io.kvtier.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvtier.core.cache.PoolExhaustedException;
import io.kvtier.core.rank.RankGroupFailedException;
import io.kvtier.core.rank.TokenLogprob;
import io.kvtier.metrics.ServeMeters;
import io.kvtier.serving.Completion;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.ModelText;
import io.kvtier.serving.RequestFailedException;
import io.kvtier.spi.CollectiveException;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.stream.IntStream;

/**
 * Serves one completion or chat request: submits its prompts, reads their events, and answers in
 * OpenAI's shape, whole or as server-sent events ending in {@code data: [DONE]}.
 *
 * <p>Beyond OpenAI's fields, each choice carries {@code token_ids} (the generated ids, since some
 * ids have no text, and a model without a tokenizer has none at all), and the answer a {@code kvtier} object with the cached prompt
 * tokens by the tier that supplied them: {@code {"cached_tokens": {"device", "host", "l3"}}}, and
 * their sum {@code matched_tokens}: the cache's match, which is more than {@code usage}'s {@code
 * cached_tokens} (the usable part, not computed) where a hybrid model cannot resume at the match
 * end (docs/HYBRID.md).
 */
final class Completions {
  private final GenerationEngine engine;
  private final ServeMeters meters;
  private final CompletionServer.Options options;

  private final GenerationCall.Listener listener;
  private final Consumer<ApiException> fatal;

  /**
   * @param fatal told of a failure after which the engine serves nothing more (its rank group
   *     failed)
   */
  Completions(
      GenerationEngine engine,
      ServeMeters meters,
      CompletionServer.Options options,
      Consumer<ApiException> fatal) {
    this.engine = engine;
    this.fatal = fatal;
    this.meters = meters;
    this.options = options;
    this.listener =
        new GenerationCall.Listener() {
          @Override
          public void submitted() {
            meters.submitted();
          }

          @Override
          public void refused() {
            meters.refused();
          }

          @Override
          public void admitted() {
            meters.admitted();
          }

          @Override
          public void ended(boolean wasAdmitted) {
            meters.ended(wasAdmitted);
          }
        };
  }

  /** One prompt's progress. */
  private static final class Choice {
    final ChoiceText text;
    final IntStream.Builder tokenIds = IntStream.builder();
    Completion completion;
    long lastTokenNanos;
    boolean cancelled;
    boolean ended;
    String finishReason;

    /** Each token's log-probabilities (where asked), those sent in chunks so far, the offset. */
    final List<TokenLogprob> logprobs = new ArrayList<>();

    int logprobsSent;
    final int[] textOffset = new int[1];

    /**
     * With echo ("" without): the prompt's text, its first token, its other tokens'
     * log-probabilities.
     */
    final String echoText;

    final int firstPromptToken;
    List<TokenLogprob> promptLogprobs;
    boolean echoSent;

    Choice(CompletionRequest request, int[] prompt, ModelText model, String echoText) {
      this.echoText = echoText;
      firstPromptToken = prompt[0];
      text =
          new ChoiceText(
              model.decoder(prompt, request.chat()),
              request.chat() ? model.endOfReply() : model.endOfGeneration(),
              request.stopRules());
    }
  }

  /**
   * Serves the request.
   *
   * @param request the parsed request
   * @param namespace the cache namespace of its prompts (its tenant's and salt's)
   * @param reply where the answer goes
   * @return the HTTP status sent
   * @throws IOException if the client went away
   */
  int serve(CompletionRequest request, long namespace, Reply reply) throws IOException {
    return serve(request, namespace, KvTransfer.NONE, reply);
  }

  /**
   * A response's id: {@code cmpl-} or {@code chatcmpl-} then the 64 random bits as 16 hex digits,
   * leading zeros kept, so that every id has one length as OpenAI's do.
   */
  static String completionId(boolean chat, long random) {
    return (chat ? "chatcmpl-" : "cmpl-") + HexFormat.of().toHexDigits(random);
  }

  /**
   * Serves the request with its part in a prompt KV transfer between replicas: a prefill request
   * generates one token and answers, as one JSON body even if it asked for a stream, with the
   * handle in {@code kv_transfer_params}; a decode request waits for the published pages.
   *
   * @param request the parsed request
   * @param namespace the cache namespace of its prompts (its tenant's and salt's)
   * @param transfer its part
   * @param reply where the answer goes
   * @return the HTTP status sent
   * @throws IOException if the client went away
   */
  int serve(CompletionRequest request, long namespace, KvTransfer transfer, Reply reply)
      throws IOException {
    boolean prefill = transfer.kind() == KvTransfer.Kind.PREFILL;
    if (request.sampling().promptLogprobs() && transfer.kind() != KvTransfer.Kind.NONE) {
      throw ApiException.badField(
          "echo",
          "echo with logprobs and kv_transfer_params is not supported: the prompt's"
              + " log-probabilities need every prompt position computed on one replica; leave"
              + " echo or logprobs out");
    }
    if (request.n() > 1 && transfer.kind() != KvTransfer.Kind.NONE) {
      throw ApiException.badField(
          "n",
          "n="
              + request.n()
              + " with kv_transfer_params is not supported: a prompt moved between replicas"
              + " answers one choice; send n=1");
    }
    // The limits as the decode request will meet them; a prefill then generates one token.
    int maxTokens = request.check(engine.vocabularySize(), engine.contextLimit());
    // An echo of the prompt alone (max_tokens 0): the engine generates one token, which no one
    // sees.
    boolean promptOnly = maxTokens == 0;
    if (prefill || promptOnly) {
      maxTokens = 1;
    }
    boolean streaming = request.stream() && !prefill;
    long start = System.nanoTime();
    long deadline = start + options.requestTimeout().toNanos();
    String id = completionId(request.chat(), ThreadLocalRandom.current().nextLong());
    long created = Instant.now().getEpochSecond();
    List<int[]> prompts = request.prompts();
    int promptTokens = prompts.stream().mapToInt(p -> p.length).sum();
    GenerationCall call;
    try {
      call =
          GenerationCall.submit(
              engine,
              prompts,
              request.n(),
              maxTokens,
              namespace,
              transfer,
              request.sampling(),
              listener);
    } catch (RuntimeException e) {
      return fail(reply, translate(e));
    }
    meters.promptTokens(promptTokens);
    Choice[] choices = new Choice[call.size()];
    // Each prompt's echo is decoded once; its n choices share it.
    String[] echoes = new String[prompts.size()];
    for (int p = 0; p < echoes.length; p++) {
      echoes[p] = request.echo() ? promptText(prompts.get(p), engine.text()) : "";
    }
    for (int i = 0; i < choices.length; i++) {
      int p = i / request.n();
      choices[i] = new Choice(request, prompts.get(p), engine.text(), echoes[p]);
    }
    // What the cache held of each prompt when the call came: its primer's match, else its first
    // choice's (every choice after a primer matches the pages the primer computed).
    Completion[] promptMatches = new Completion[prompts.size()];
    Stream stream = new Stream(request, reply, id, created);
    LogprobsJson logprobs =
        request.sampling().logprobs() >= 0 ? new LogprobsJson(engine.text()) : null;
    int open = choices.length;
    try {
      if (streaming) {
        reply.startEvents();
        if (request.chat()) {
          for (int i = 0; i < choices.length; i++) {
            stream.chunk(
                i, ApiJson.object().put("role", "assistant").put("content", ""), null, null, null);
          }
        }
      }
      while (open > 0) {
        GenerationCall.Event event = call.next(deadline);
        Choice c = choices[event.index()];
        if (c.ended) {
          continue;
        }
        switch (event) {
          case GenerationCall.Admitted a -> {}
          case GenerationCall.Primed p -> {
            // The prompt is cached: its choices start from it (the first is c, not yet started).
            promptMatches[p.prompt()] = p.completion();
            try {
              call.startChoices(p.prompt());
            } catch (RuntimeException e) {
              call.cancelAll();
              return fail(reply, translate(e));
            }
          }
          case GenerationCall.PromptLogprobs pl -> {
            c.promptLogprobs = pl.logprobs();
            echo(streaming, stream, c, event.index(), logprobs);
          }
          case GenerationCall.Token t -> {
            echo(streaming, stream, c, event.index(), logprobs);
            if (c.text.stopped() || promptOnly) {
              continue; // made before the engine saw the cancel, or not asked for
            }
            meters.token(
                c.lastTokenNanos == 0 ? start : c.lastTokenNanos, t.nanos(), c.lastTokenNanos == 0);
            c.lastTokenNanos = t.nanos();
            c.tokenIds.add(t.token());
            if (logprobs != null) {
              if (t.logprob() == null) {
                throw new IllegalStateException(
                    "the engine reported no log-probabilities for a token of choice "
                        + event.index());
              }
              c.logprobs.add(t.logprob());
            }
            String piece = c.text.add(t.token());
            if (streaming && !piece.isEmpty()) {
              stream.text(event.index(), piece, null, null, unsent(c, logprobs, request.chat()));
            }
            if (c.text.stopped() && !c.cancelled && !prefill) {
              c.cancelled = true;
              call.cancel(event.index());
            }
          }
          case GenerationCall.Finished f -> {
            c.completion = f.completion();
            c.ended = true;
            if (event.index() % request.n() == 0
                && promptMatches[event.index() / request.n()] == null) {
              promptMatches[event.index() / request.n()] = f.completion(); // no primer: choice 0's
            }
            open--;
            echo(streaming, stream, c, event.index(), logprobs);
            String piece = c.text.finish();
            c.finishReason = c.text.stopped() ? "stop" : "length";
            meters.finished(c.finishReason, start, f.nanos());
            if (streaming) {
              stream.text(
                  event.index(),
                  piece,
                  c.finishReason,
                  c.text.stopReason(),
                  unsent(c, logprobs, request.chat()));
            }
          }
          case GenerationCall.Failed f -> {
            call.cancelAll();
            meters.failed();
            return fail(reply, translate(f.cause()));
          }
        }
      }
    } catch (TimeoutException e) {
      call.cancelAll();
      meters.aborted();
      return fail(
          reply,
          ApiException.unavailable(
              "timeout",
              "the request did not finish within "
                  + options.requestTimeout().toSeconds()
                  + " s: the server is overloaded, retry later",
              OptionalInt.of(5)));
    } catch (InterruptedException e) {
      call.cancelAll();
      Thread.currentThread().interrupt();
      return fail(
          reply,
          ApiException.unavailable(
              "shutting_down", "the server is shutting down", OptionalInt.empty()));
    } catch (IOException | RuntimeException e) {
      // The client went away (a failed write) or the answer could not be built: stop generating.
      call.cancelAll();
      meters.aborted();
      throw e;
    }
    ObjectNode usage = usage(promptTokens, choices, promptMatches);
    ObjectNode kvtier = kvtier(promptMatches);
    transferred(transfer, choices, kvtier);
    if (streaming) {
      if (request.includeUsage()) {
        ObjectNode last = stream.envelope();
        last.putArray("choices");
        last.set("usage", usage);
        last.set("kvtier", kvtier);
        reply.event(ApiJson.write(last));
      }
      reply.event("[DONE]");
      reply.endEvents();
      return 200;
    }
    ObjectNode body = stream.envelope();
    body.put("object", request.chat() ? "chat.completion" : "text_completion");
    ArrayNode array = body.putArray("choices");
    for (int i = 0; i < choices.length; i++) {
      Choice c = choices[i];
      ObjectNode choice = array.addObject().put("index", i);
      if (request.chat()) {
        choice
            .putObject("message")
            .put("role", "assistant")
            .put("content", c.text.text())
            .putNull("refusal");
      } else {
        choice.put("text", c.echoText + c.text.text());
      }
      if (logprobs == null) {
        choice.putNull("logprobs");
      } else if (request.chat()) {
        choice.set("logprobs", logprobs.chat(c.logprobs));
      } else if (request.echo()) {
        int[] offset = new int[1];
        ObjectNode prompt = logprobs.prompt(c.firstPromptToken, promptLogprobs(c), offset);
        choice.set(
            "logprobs", LogprobsJson.concat(prompt, logprobs.completion(c.logprobs, offset)));
      } else {
        choice.set("logprobs", logprobs.completion(c.logprobs, new int[1]));
      }
      choice.put("finish_reason", c.finishReason);
      stopReason(choice, c.text.stopReason());
      ArrayNode ids = choice.putArray("token_ids");
      c.tokenIds.build().forEach(ids::add);
    }
    body.set("usage", usage);
    body.set("kvtier", kvtier);
    if (prefill) {
      List<Completion> done = new java.util.ArrayList<>(choices.length);
      for (Choice c : choices) {
        done.add(c.completion);
      }
      body.set(
          KvTransfer.FIELD,
          KvTransfer.handle(options.transfers(), options.modelName(), prompts, namespace, done));
    }
    reply.json(200, ApiJson.write(body));
    return 200;
  }

  /** The prompt as its tokens decode: what echo puts before a choice's text. */
  private static String promptText(int[] prompt, ModelText model) {
    ModelText.Decoder decoder = model.decoder(new int[0], false);
    StringBuilder text = new StringBuilder();
    for (int token : prompt) {
      text.append(decoder.add(token));
    }
    return text.append(decoder.finish()).toString();
  }

  /** The prompt's log-probabilities the engine reported, which echo with logprobs needs. */
  private static List<TokenLogprob> promptLogprobs(Choice c) {
    if (c.promptLogprobs == null) {
      throw new IllegalStateException(
          "the engine reported no prompt log-probabilities before the choice's first token");
    }
    return c.promptLogprobs;
  }

  /**
   * A stream's echo of the choice's prompt, once, before its first token's text: its text and,
   * with logprobs, its tokens' log-probabilities (which come before the first token).
   */
  private static void echo(
      boolean streaming, Stream stream, Choice c, int index, LogprobsJson logprobs)
      throws IOException {
    if (!streaming || !stream.request.echo() || c.echoSent) {
      return;
    }
    if (logprobs != null && c.promptLogprobs == null) {
      return; // the tokens' log-probabilities come first (RequestListener.promptLogprobs)
    }
    c.echoSent = true;
    ObjectNode node =
        logprobs == null
            ? null
            : logprobs.prompt(c.firstPromptToken, c.promptLogprobs, c.textOffset);
    stream.text(index, c.echoText, null, null, node);
  }

  /**
   * The log-probabilities of the choice's tokens not yet sent in a chunk, marked sent; null where
   * the request did not ask.
   */
  private static ObjectNode unsent(Choice c, LogprobsJson logprobs, boolean chat) {
    if (logprobs == null) {
      return null;
    }
    List<TokenLogprob> entries = c.logprobs.subList(c.logprobsSent, c.logprobs.size());
    c.logprobsSent = c.logprobs.size();
    return chat ? logprobs.chat(entries) : logprobs.completion(entries, c.textOffset);
  }

  /**
   * The transfer's counts into the meters and the answer's {@code kvtier.transfer}: a prefill
   * request's pages published, a decode request's pages expected, fetched and recomputed.
   */
  private void transferred(KvTransfer transfer, Choice[] choices, ObjectNode kvtier) {
    if (transfer.kind() == KvTransfer.Kind.NONE) {
      return;
    }
    long pageBytes = options.transfers().pageBytes();
    int published = 0;
    int expected = 0;
    int fetched = 0;
    int recomputed = 0;
    for (Choice c : choices) {
      io.kvtier.serving.TransferOutcome t = c.completion.transfer();
      if (t.published()) {
        published += t.pagesPublished();
        meters.pdPublished(t.pagesPublished(), t.pagesPublished() * pageBytes, t.nanos());
      } else if (t.awaited()) {
        expected += t.pagesExpected();
        fetched += t.pagesFetched();
        recomputed += t.pagesRecomputed();
        meters.pdAwaited(
            t.pagesFetched(), t.pagesRecomputed(), t.pagesFetched() * pageBytes, t.nanos());
      }
    }
    ObjectNode node = kvtier.putObject("transfer");
    if (transfer.kind() == KvTransfer.Kind.PREFILL) {
      node.put("pages_published", published);
    } else {
      node.put("pages_expected", expected)
          .put("pages_fetched", fetched)
          .put("pages_recomputed", recomputed);
    }
  }

  /**
   * OpenAI's usage: each prompt counts once, however many choices it has, and so do its cached
   * tokens (what the cache held of it when the call came); every choice's tokens count.
   */
  private static ObjectNode usage(int promptTokens, Choice[] choices, Completion[] promptMatches) {
    int completionTokens = 0;
    for (Choice c : choices) {
      completionTokens += c.text.tokens();
    }
    int cached = 0;
    for (Completion match : promptMatches) {
      cached += match.cachedTokens();
    }
    ObjectNode usage =
        ApiJson.object()
            .put("prompt_tokens", promptTokens)
            .put("completion_tokens", completionTokens)
            .put("total_tokens", promptTokens + completionTokens);
    usage.putObject("prompt_tokens_details").put("cached_tokens", cached);
    return usage;
  }

  /** The cached tokens of each prompt by tier, each prompt once, as {@link #usage} counts them. */
  private static ObjectNode kvtier(Completion[] promptMatches) {
    int device = 0;
    int host = 0;
    int l3 = 0;
    for (Completion match : promptMatches) {
      device += match.deviceHitTokens();
      host += match.hostHitTokens();
      l3 += match.l3HitTokens();
    }
    ObjectNode kvtier = ApiJson.object();
    kvtier.putObject("cached_tokens").put("device", device).put("host", host).put("l3", l3);
    kvtier.put("matched_tokens", device + host + l3);
    return kvtier;
  }

  private int fail(Reply reply, RuntimeException failure) throws IOException {
    if (failure instanceof ApiException e && e.code().equals("rank_group_failed")) {
      fatal.accept(e);
    }
    if (!reply.streaming()) {
      throw failure;
    }
    ApiException error =
        failure instanceof ApiException e
            ? e
            : new ApiException(
                500,
                ApiException.SERVER_ERROR,
                "internal_error",
                Optional.empty(),
                "internal error: " + failure,
                OptionalInt.empty());
    // The status went out with the first event: the error goes as one, as OpenAI's servers do.
    reply.event(ApiJson.write(CompletionServer.errorBody(error)));
    reply.event("[DONE]");
    reply.endEvents();
    return error.status();
  }

  /** What the engine's failure means to the client. */
  static RuntimeException translate(Throwable failure) {
    return switch (failure) {
      case ApiException e -> e;
      case GenerationEngine.EngineBusyException e ->
          new ApiException(
              429,
              "rate_limit_error",
              "queue_full",
              Optional.empty(),
              e.getMessage() + ": retry later",
              OptionalInt.of(1));
      case RankGroupFailedException e ->
          ApiException.unavailable(
              "rank_group_failed",
              "the engine's rank group failed and the server is stopping: " + e.getMessage(),
              OptionalInt.empty());
      // Rank 0's own collective call failed (a rank process died, a timeout, a desync): the
      // engine thread has ended, so the group serves nothing more, as for a failed rank.
      case CollectiveException e ->
          ApiException.unavailable(
              "rank_group_failed",
              "the engine's rank group failed and the server is stopping: " + e.getMessage(),
              OptionalInt.empty());
      case PoolExhaustedException e ->
          ApiException.unavailable(
              "cache_full", "the KV cache is full: " + e.getMessage(), OptionalInt.of(1));
      case RequestFailedException e ->
          switch (e.outcome()) {
            case REJECTED ->
                ApiException.unavailable(
                    "cache_full",
                    "the KV cache cannot hold the request: " + e.getMessage(),
                    OptionalInt.empty());
            case LOAD_FAILED ->
                ApiException.unavailable("load_failed", e.getMessage(), OptionalInt.of(1));
            default -> ApiException.unavailable("aborted", e.getMessage(), OptionalInt.of(1));
          };
      case IllegalArgumentException e -> ApiException.badRequest(e.getMessage());
      case RuntimeException e -> e;
      default -> new IllegalStateException("the engine failed: " + failure, failure);
    };
  }

  /** The chunks of a streamed answer. */
  private static final class Stream {
    private final CompletionRequest request;
    private final Reply reply;
    private final String id;
    private final long created;

    Stream(CompletionRequest request, Reply reply, String id, long created) {
      this.request = request;
      this.reply = reply;
      this.id = id;
      this.created = created;
    }

    ObjectNode envelope() {
      return ApiJson.object()
          .put("id", id)
          .put("object", request.chat() ? "chat.completion.chunk" : "text_completion")
          .put("created", created)
          .put("model", request.model());
    }

    void text(int index, String piece, String finishReason, Object stopReason, ObjectNode logprobs)
        throws IOException {
      if (request.chat()) {
        chunk(
            index,
            piece.isEmpty() ? ApiJson.object() : ApiJson.object().put("content", piece),
            finishReason,
            stopReason,
            logprobs);
        return;
      }
      ObjectNode chunk = envelope();
      ObjectNode choice = chunk.putArray("choices").addObject();
      choice.put("text", piece).put("index", index);
      choice.set("logprobs", logprobs == null ? ApiJson.object().nullNode() : logprobs);
      choice.put("finish_reason", finishReason);
      if (finishReason != null) {
        stopReason(choice, stopReason);
      }
      reply.event(ApiJson.write(chunk));
    }

    void chunk(
        int index, ObjectNode delta, String finishReason, Object stopReason, ObjectNode logprobs)
        throws IOException {
      ObjectNode chunk = envelope();
      ObjectNode choice = chunk.putArray("choices").addObject();
      choice.put("index", index);
      choice.set("delta", delta);
      choice.set("logprobs", logprobs == null ? ApiJson.object().nullNode() : logprobs);
      choice.put("finish_reason", finishReason);
      if (finishReason != null) {
        stopReason(choice, stopReason);
      }
      reply.event(ApiJson.write(chunk));
    }
  }

  /**
   * vLLM's {@code stop_reason} of a finished choice: the stop sequence or the stop token id that
   * ended it, null where it ended otherwise (its budget, or the model's end token).
   */
  private static void stopReason(ObjectNode choice, Object reason) {
    switch (reason) {
      case Integer token -> choice.put("stop_reason", token);
      case String stop -> choice.put("stop_reason", stop);
      case null -> choice.putNull("stop_reason");
      default -> throw new IllegalArgumentException("stop reason " + reason);
    }
  }
}
