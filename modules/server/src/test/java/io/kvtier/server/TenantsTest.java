package io.kvtier.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.core.tenant.ApiKeys;
import io.kvtier.core.tenant.CacheNamespaces;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Tenants at the HTTP layer, with a scripted engine that records each request's namespace: the
 * key names the tenant, tenant and {@code cache_salt} the namespace, a wrong key is a 401, the
 * shared salt is namespace 0 for everyone, and a malformed salt is a 400.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES)
class TenantsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final byte[] SECRET = "tenants-test-secret-0123".getBytes(StandardCharsets.UTF_8);
  private static final CacheNamespaces NAMESPACES =
      CacheNamespaces.of(SECRET, Optional.of("public"));

  private final FakeEngine engine = new FakeEngine();
  private final HttpClient client = HttpClient.newHttpClient();
  private CompletionServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
    engine.close();
    client.close();
  }

  private void start(CompletionServer.Options options) throws Exception {
    server =
        CompletionServer.start(
            engine,
            new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
            new InetSocketAddress("127.0.0.1", 0),
            options);
  }

  private static CompletionServer.Options options() {
    return new CompletionServer.Options(
        "kvtier-tiny", Optional.empty(), 4096, Duration.ofSeconds(5), Duration.ofSeconds(30));
  }

  private static ApiKeys keyFile() {
    return ApiKeys.parse("keys", List.of("sk-a alice", "sk-b bob", "sk-a2 alice"));
  }

  private HttpResponse<String> post(String path, String body, Optional<String> key)
      throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.address().getPort() + path))
            .POST(HttpRequest.BodyPublishers.ofString(body));
    key.ifPresent(k -> b.header("Authorization", "Bearer " + k));
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** Sends a completion and returns the namespace the engine got it in. */
  private long namespaceOf(Optional<String> key, Optional<String> salt) throws Exception {
    String body =
        "{\"model\": \"kvtier-tiny\", \"prompt\": \"a long shared prompt\", \"max_tokens\": 1"
            + salt.map(s -> ", \"cache_salt\": \"" + s + "\"").orElse("")
            + "}";
    HttpResponse<String> r = post("/v1/completions", body, key);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return List.copyOf(engine.namespaces).getLast();
  }

  @Test
  void eachKeysTenantAndEachSaltGetsItsOwnNamespaceAndTheSharedSaltIsZero() throws Exception {
    start(options().withTenants(Optional.of(keyFile()), NAMESPACES));

    long alice = namespaceOf(Optional.of("sk-a"), Optional.empty());
    long bob = namespaceOf(Optional.of("sk-b"), Optional.empty());
    long aliceSalted = namespaceOf(Optional.of("sk-a"), Optional.of("x"));
    long bobSalted = namespaceOf(Optional.of("sk-b"), Optional.of("x"));

    assertThat(List.of(alice, bob, aliceSalted, bobSalted)).doesNotHaveDuplicates();
    assertThat(alice).isEqualTo(NAMESPACES.namespace("alice", Optional.empty()));
    assertThat(alice).isNotZero();
    assertThat(namespaceOf(Optional.of("sk-a2"), Optional.empty()))
        .as("two keys of one tenant share its cache")
        .isEqualTo(alice);
    assertThat(namespaceOf(Optional.of("sk-a"), Optional.of("x"))).isEqualTo(aliceSalted);
    assertThat(namespaceOf(Optional.of("sk-a"), Optional.of("public"))).isZero();
    assertThat(namespaceOf(Optional.of("sk-b"), Optional.of("public"))).isZero();
  }

  @Test
  void aChatsSaltChoosesItsNamespaceToo() throws Exception {
    start(options().withTenants(Optional.of(keyFile()), NAMESPACES));
    HttpResponse<String> r =
        post(
            "/v1/chat/completions",
            "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
                + " \"hi\"}], \"max_tokens\": 1, \"cache_salt\": \"x\"}",
            Optional.of("sk-b"));

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(engine.namespaces).containsExactly(NAMESPACES.namespace("bob", Optional.of("x")));
  }

  @Test
  void withoutTenantsOnlyTheSaltSeparatesAndNoSaltIsTheSharedNamespace() throws Exception {
    start(options().withApiKey(Optional.of("s3cret")).withTenants(Optional.empty(), NAMESPACES));

    assertThat(namespaceOf(Optional.of("s3cret"), Optional.empty())).isZero();
    assertThat(namespaceOf(Optional.of("s3cret"), Optional.of("x")))
        .isEqualTo(NAMESPACES.namespace(ApiKeys.DEFAULT_TENANT, Optional.of("x")))
        .isNotZero();
  }

  @Test
  void aWrongOrMissingKeyOfAKeyFileIs401AndReachesNoEngine() throws Exception {
    start(options().withTenants(Optional.of(keyFile()), NAMESPACES));
    String body = "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\", \"max_tokens\": 1}";

    HttpResponse<String> wrong = post("/v1/completions", body, Optional.of("sk-c"));
    HttpResponse<String> prefix = post("/v1/completions", body, Optional.of("sk-"));
    HttpResponse<String> tenantName = post("/v1/completions", body, Optional.of("alice"));
    HttpResponse<String> none = post("/v1/completions", body, Optional.empty());

    for (HttpResponse<String> r : List.of(wrong, prefix, tenantName, none)) {
      assertThat(r.statusCode()).as(r.body()).isEqualTo(401);
      JsonNode error = JSON.readTree(r.body()).get("error");
      assertThat(error.get("code").asText()).isEqualTo("invalid_api_key");
      assertThat(error.get("message").asText()).contains("--api-key-file");
    }
    assertThat(wrong.body()).contains("the API key is wrong");
    assertThat(none.body()).contains("no API key");
    assertThat(engine.submitted.get()).isZero();
  }

  @Test
  void aCacheSaltMustBeANonEmptyString() throws Exception {
    start(options());
    for (String salt : List.of("\"\"", "7", "[\"x\"]")) {
      HttpResponse<String> r =
          post(
              "/v1/completions",
              "{\"model\": \"kvtier-tiny\", \"prompt\": \"a\", \"cache_salt\": " + salt + "}",
              Optional.empty());
      assertThat(r.statusCode()).as(salt).isEqualTo(400);
      assertThat(JSON.readTree(r.body()).at("/error/param").asText()).isEqualTo("cache_salt");
    }
    assertThat(engine.submitted.get()).isZero();
  }

  @Test
  void aKeyAndAKeyFileTogetherAreRefused() {
    assertThatThrownBy(
            () ->
                options()
                    .withApiKey(Optional.of("k"))
                    .withTenants(Optional.of(keyFile()), NAMESPACES)
                    .withApiKey(Optional.of("k")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not both");
  }
}
