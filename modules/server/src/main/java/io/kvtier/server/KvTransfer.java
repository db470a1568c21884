package io.kvtier.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvtier.core.cache.PageHasher;
import io.kvtier.core.rank.TransferRole;
import io.kvtier.serving.Completion;
import io.kvtier.spi.PageKey;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A request's part in moving a prompt's KV from a prefill replica to a decode replica through the
 * shared L3 store (docs/SERVE.md, "Prefill and decode replicas"), read from its {@code
 * kv_transfer_params} (vLLM's field) and the replica's role, and the handle a prefill request
 * answers with.
 *
 * <p>A prefill request ({@code --role prefill}, or {@code {"do_remote_decode": true}} on a {@code
 * both} replica) generates one token and publishes its prompt's full pages; its answer's {@code
 * kv_transfer_params} is the handle. A decode request carries the handle back with the original
 * body: the handle is checked against this replica and this request (model, ranks, parallel
 * layout, page size, and the page hashes of its prompts in its tenant's namespace), and the
 * request waits for the published pages.
 *
 * @param kind what the request does
 * @param awaitPages per prompt, the pages the handle published (decode only; empty otherwise)
 */
record KvTransfer(Kind kind, int[] awaitPages) {
  /** What a request does with its prompt's KV. */
  enum Kind {
    /** An ordinary request. */
    NONE,
    /** Publishes its prompt for a decode replica. */
    PREFILL,
    /** Decodes from a prompt a prefill replica published. */
    DECODE
  }

  /** An ordinary request. */
  static final KvTransfer NONE = new KvTransfer(Kind.NONE, new int[0]);

  static final KvTransfer PREFILL = new KvTransfer(Kind.PREFILL, new int[0]);

  /** The error code of a handle that does not fit. */
  static final String INVALID = "invalid_kv_transfer_params";

  /** The handle format this server writes and reads. */
  static final int HANDLE_VERSION = 1;

  static final String FIELD = "kv_transfer_params";

  KvTransfer {
    Objects.requireNonNull(kind, "kind");
    awaitPages = awaitPages.clone();
  }

  /**
   * The engine request's transfer role of prompt {@code i}.
   *
   * @param i the prompt
   * @return its role
   */
  TransferRole role(int i) {
    return switch (kind) {
      case NONE -> TransferRole.NONE;
      case PREFILL -> TransferRole.PUBLISH;
      case DECODE -> TransferRole.AWAIT;
    };
  }

  /** The pages prompt {@code i} awaits (decode), else 0. */
  int pages(int i) {
    return kind == Kind.DECODE ? awaitPages[i] : 0;
  }

  /**
   * Reads the request's part.
   *
   * @param body the request body
   * @param settings the replica's transfer settings
   * @param model the served model id
   * @param prompts the request's prompts
   * @param namespace their cache namespace (tenant and {@code cache_salt})
   * @return what the request does
   * @throws ApiException a 400 {@code invalid_kv_transfer_params} naming the field at fault
   */
  static KvTransfer of(
      JsonNode body, TransferSettings settings, String model, List<int[]> prompts, long namespace) {
    JsonNode params = body.get(FIELD);
    boolean given = params != null && !params.isNull();
    if (!given) {
      return settings.role() == TransferSettings.Role.PREFILL ? PREFILL : NONE;
    }
    if (!params.isObject()) {
      throw invalid(
          FIELD,
          FIELD
              + " must be an object: {\"do_remote_decode\": true} for a prefill request, or the"
              + " kv_transfer_params a prefill replica answered, not "
              + BodyFields.describe(params));
    }
    if (!settings.enabled()) {
      throw invalid(
          FIELD,
          "this replica takes no "
              + FIELD
              + ": it has no L3 store shared with other replicas; start it with --l3 file (one"
              + " machine) or --l3 hazelcast, or send the request without "
              + FIELD);
    }
    boolean remoteDecode = flag(params, "do_remote_decode");
    boolean handle = flag(params, "do_remote_prefill") || params.has("kvtier_handle");
    if (remoteDecode && handle) {
      throw invalid(
          FIELD,
          FIELD
              + " asks both to prefill (do_remote_decode) and to decode from a handle"
              + " (do_remote_prefill, kvtier_handle): send one");
    }
    if (remoteDecode) {
      if (settings.role() == TransferSettings.Role.DECODE) {
        throw invalid(
            FIELD + ".do_remote_decode",
            "this replica is --role decode: send prefill requests ({\"do_remote_decode\": true})"
                + " to a --role prefill or both replica");
      }
      return PREFILL;
    }
    if (!handle) {
      return settings.role() == TransferSettings.Role.PREFILL ? PREFILL : NONE;
    }
    if (settings.role() == TransferSettings.Role.PREFILL) {
      throw invalid(
          FIELD,
          "this replica is --role prefill and does not decode: send the handle to a --role decode"
              + " or both replica");
    }
    return new KvTransfer(Kind.DECODE, check(params, settings, model, prompts, namespace));
  }

  private static boolean flag(JsonNode params, String name) {
    JsonNode v = params.get(name);
    if (v == null || v.isNull()) {
      return false;
    }
    if (!v.isBoolean()) {
      throw invalid(
          FIELD + "." + name,
          FIELD + "." + name + " must be true or false, not " + BodyFields.describe(v));
    }
    return v.booleanValue();
  }

  /** Checks the handle against this replica and request; returns the pages each prompt awaits. */
  private static int[] check(
      JsonNode h, TransferSettings settings, String model, List<int[]> prompts, long namespace) {
    int version = integer(h, "kvtier_handle");
    if (version != HANDLE_VERSION) {
      throw invalid(
          FIELD + ".kvtier_handle",
          "kvtier_handle="
              + version
              + " is not a handle this server reads ("
              + HANDLE_VERSION
              + "): prefill and decode replicas must run the same kvtier version");
    }
    String handleModel = string(h, "model");
    if (!handleModel.equals(model)) {
      throw mismatch("model", "\"" + handleModel + "\"", "\"" + model + "\"");
    }
    int ranks = integer(h, "ranks");
    if (ranks != settings.ranks()) {
      throw mismatch("ranks", Integer.toString(ranks), Integer.toString(settings.ranks()));
    }
    String parallel = string(h, "parallel");
    if (!parallel.equals(settings.parallel())) {
      throw mismatch("parallel", parallel, settings.parallel());
    }
    int pageSize = integer(h, "page_size");
    if (pageSize != settings.pageSize()) {
      throw mismatch(
          "page_size", Integer.toString(pageSize), Integer.toString(settings.pageSize()));
    }
    JsonNode entries = h.get("prompts");
    if (entries == null || !entries.isArray()) {
      throw invalid(
          FIELD + ".prompts",
          FIELD
              + ".prompts is missing or not an array: send the handle the prefill replica"
              + " answered, unchanged");
    }
    if (entries.size() != prompts.size()) {
      throw invalid(
          FIELD + ".prompts",
          "the handle holds "
              + entries.size()
              + " prompts but the request has "
              + prompts.size()
              + ": send the body of the prefill request with its handle");
    }
    int[] awaits = new int[prompts.size()];
    for (int i = 0; i < prompts.size(); i++) {
      awaits[i] = checkPrompt(entries.get(i), i, prompts.get(i), settings.pageSize(), namespace);
    }
    return awaits;
  }

  private static int checkPrompt(JsonNode e, int i, int[] prompt, int pageSize, long namespace) {
    String at = FIELD + ".prompts[" + i + "]";
    if (!e.isObject()) {
      throw invalid(at, at + " must be an object, not " + BodyFields.describe(e));
    }
    int tokens = integer(e, at, "prompt_tokens");
    if (tokens != prompt.length) {
      throw invalid(
          at + ".prompt_tokens",
          "the handle is for another prompt: prompt_tokens="
              + tokens
              + " but this request's prompt"
              + (i > 0 ? " " + i : "")
              + " has "
              + prompt.length
              + " tokens; send the prompt of the prefill request with its handle");
    }
    int pages = integer(e, at, "pages");
    if (pages != prompt.length / pageSize) {
      throw invalid(
          at + ".pages",
          at
              + ".pages="
              + pages
              + " but a prompt of "
              + prompt.length
              + " tokens has "
              + prompt.length / pageSize
              + " full pages of "
              + pageSize
              + ": send the handle the prefill replica answered, unchanged");
    }
    JsonNode hashes = e.get("page_hashes");
    if (hashes == null || !hashes.isArray() || hashes.size() != pages) {
      throw invalid(
          at + ".page_hashes",
          at
              + ".page_hashes must be an array of "
              + pages
              + " hex strings: send the handle the prefill replica answered, unchanged");
    }
    List<PageKey> ours = pageKeys(namespace, prompt, pages, pageSize);
    for (int p = 0; p < pages; p++) {
      JsonNode given = hashes.get(p);
      if (!given.isTextual()
          || !given.textValue().toLowerCase(Locale.ROOT).equals(ours.get(p).toHex())) {
        throw invalid(
            at + ".page_hashes[" + p + "]",
            "the handle's page "
                + p
                + " differs from this request's: the handle was made for another prompt, tenant"
                + " or cache_salt, or the replicas have different --namespace-secret-file"
                + " secrets; send the prefill request's prompt, API key and cache_salt with its"
                + " handle, and give both replicas the same --namespace-secret-file");
      }
    }
    JsonNode published = e.get("published_pages");
    int ready = pages;
    if (published != null && !published.isNull()) {
      ready = integer(e, at, "published_pages");
      if (ready < 0 || ready > pages) {
        throw invalid(
            at + ".published_pages",
            at + ".published_pages=" + ready + " must be between 0 and its " + pages + " pages");
      }
    }
    return ready;
  }

  private static int integer(JsonNode h, String name) {
    return integer(h, FIELD, name);
  }

  private static int integer(JsonNode h, String at, String name) {
    JsonNode v = h.get(name);
    String param = at + "." + name;
    if (v == null || v.isNull()) {
      throw missing(param);
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt()) {
      throw invalid(param, param + " must be an integer, not " + BodyFields.describe(v));
    }
    return v.intValue();
  }

  private static String string(JsonNode h, String name) {
    JsonNode v = h.get(name);
    String param = FIELD + "." + name;
    if (v == null || v.isNull()) {
      throw missing(param);
    }
    if (!v.isTextual()) {
      throw invalid(param, param + " must be a string, not " + BodyFields.describe(v));
    }
    return v.textValue();
  }

  private static ApiException missing(String param) {
    return invalid(
        param,
        param
            + " is missing: this is not a kvtier handle; send the kv_transfer_params a kvtier"
            + " prefill replica answered, unchanged");
  }

  private static ApiException mismatch(String field, String handle, String replica) {
    return invalid(
        FIELD + "." + field,
        "the handle's "
            + field
            + " is "
            + handle
            + " but this replica's is "
            + replica
            + ": send it to a decode replica of the same model, ranks, parallel layout and page"
            + " size as the prefill replica");
  }

  static ApiException invalid(String param, String message) {
    return new ApiException(
        400,
        ApiException.INVALID_REQUEST,
        INVALID,
        Optional.of(param),
        message,
        OptionalInt.empty());
  }

  /**
   * The handle a prefill request answers with.
   *
   * @param settings the replica's transfer settings
   * @param model the served model id
   * @param prompts the request's prompts
   * @param namespace their cache namespace
   * @param completions each prompt's completion, with the pages it published
   * @return the {@code kv_transfer_params} object
   */
  static ObjectNode handle(
      TransferSettings settings,
      String model,
      List<int[]> prompts,
      long namespace,
      List<Completion> completions) {
    int pageSize = settings.pageSize();
    ObjectNode h =
        ApiJson.object()
            .put("do_remote_prefill", true)
            .put("kvtier_handle", HANDLE_VERSION)
            .put("model", model)
            .put("ranks", settings.ranks())
            .put("parallel", settings.parallel())
            .put("page_size", pageSize);
    ArrayNode entries = h.putArray("prompts");
    int publishedSum = 0;
    for (int i = 0; i < prompts.size(); i++) {
      int[] prompt = prompts.get(i);
      int pages = prompt.length / pageSize;
      int published = Math.max(0, completions.get(i).transfer().pagesPublished());
      publishedSum += published;
      ObjectNode e = entries.addObject().put("prompt_tokens", prompt.length).put("pages", pages);
      ArrayNode hashes = e.putArray("page_hashes");
      for (PageKey k : pageKeys(namespace, prompt, pages, pageSize)) {
        hashes.add(k.toHex());
      }
      e.put("published_pages", published);
    }
    h.put("published_pages", publishedSum);
    h.put("prefill_replica", settings.replicaId());
    return h;
  }

  /**
   * The chained hashes of the first {@code pages} full pages of a prompt in {@code namespace}: the
   * handle's {@code page_hashes}, written by the prefill side and checked by the decode side.
   */
  private static List<PageKey> pageKeys(long namespace, int[] prompt, int pages, int pageSize) {
    return PageHasher.pageKeys(namespace, Arrays.copyOf(prompt, pages * pageSize), pageSize);
  }
}
