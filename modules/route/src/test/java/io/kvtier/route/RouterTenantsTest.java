package io.kvtier.route;

import static io.kvtier.route.RouteTesting.PAGE;
import static io.kvtier.route.RouteTesting.options;
import static io.kvtier.route.RouteTesting.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.CacheMedium;
import io.kvtier.core.tenant.ApiKeys;
import io.kvtier.core.tenant.CacheNamespaces;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The router with tenants: it computes each request's namespace as serve does (key file, secret,
 * shared salt), so a prompt is scored only against blocks of its own namespace, and it forwards
 * each client's own key to the replica.
 */
class RouterTenantsTest {
  private static final CacheNamespaces NAMESPACES =
      CacheNamespaces.of(
          "router-tenants-secret-0123".getBytes(StandardCharsets.UTF_8), Optional.of("public"));
  private static final ApiKeys KEYS = ApiKeys.parse("keys", List.of("sk-a alice", "sk-b bob"));

  private final List<FakeReplica> replicas = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();
  private KvRouter router;

  @AfterEach
  void close() {
    if (router != null) {
      router.close();
    }
    replicas.forEach(FakeReplica::close);
    http.close();
  }

  private HttpResponse<String> complete(int[] tokens, String key, Optional<String> salt)
      throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + "/v1/completions"))
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"model\":\"tiny\",\"prompt\":"
                        + Arrays.toString(tokens)
                        + salt.map(s -> ",\"cache_salt\":\"" + s + "\"").orElse("")
                        + ",\"max_tokens\":4}"));
    if (!key.isEmpty()) {
      b.header("Authorization", "Bearer " + key);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private void awaitIndexed(int replica, int blocks) throws InterruptedException {
    for (int i = 0; i < 400 && router.index().size(replica, PrefixIndex.GPU) < blocks; i++) {
      Thread.sleep(25);
    }
    assertThat(router.index().size(replica, PrefixIndex.GPU)).isGreaterThanOrEqualTo(blocks);
  }

  @Test
  void aTenantsPromptIsScoredOnlyAgainstItsOwnNamespacesBlocks() throws Exception {
    for (int i = 0; i < 2; i++) {
      replicas.add(new FakeReplica(i));
    }
    router =
        new KvRouter(
            replicas.stream().map(FakeReplica::spec).toList(),
            options().withTenants(Optional.of(KEYS), NAMESPACES));
    int[] p = prompt(32, 1);
    long alice = NAMESPACES.namespace("alice", Optional.empty());
    long bob = NAMESPACES.namespace("bob", Optional.empty());
    replicas.get(1).caches(p, PAGE, CacheMedium.DEVICE, alice);
    replicas.get(0).caches(p, PAGE, CacheMedium.DEVICE, CacheNamespaces.SHARED);
    awaitIndexed(1, 8);
    awaitIndexed(0, 8);

    // The index holds the same tokens under three namespaces; each request sees its own.
    assertThat(router.index().match(router.blockHashes(p, alice))[1][0]).isEqualTo(8);
    assertThat(router.index().match(router.blockHashes(p, alice))[0][0]).isZero();
    assertThat(router.index().match(router.blockHashes(p, bob))[0][0]).isZero();
    assertThat(router.index().match(router.blockHashes(p, bob))[1][0]).isZero();
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> r = complete(p, "sk-a", Optional.empty());
      assertThat(r.body()).isEqualTo("{\"replica\":1}");
    }
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> r = complete(p, "sk-b", Optional.of("public"));
      assertThat(r.body())
          .as("the shared salt finds the shared blocks")
          .isEqualTo("{\"replica\":0}");
    }
    // Bob's own namespace holds nothing: alice's blocks and the predictions of her requests
    // do not count for him; his first request goes by load, and then his own prediction
    // (in his namespace) keeps the rest with it.
    assertThat(router.index().match(router.blockHashes(p, bob))[1][0]).isZero();
    List<String> bobs = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      bobs.add(complete(p, "sk-b", Optional.empty()).body());
    }
    assertThat(bobs).containsOnly(bobs.getFirst());
    assertThat(router.index().match(router.blockHashes(p, alice))[1][0]).isEqualTo(8);
    assertThat(replicas.get(1).authorizations).contains("Bearer sk-a");
    assertThat(replicas.get(0).authorizations)
        .contains("Bearer sk-b")
        .doesNotContain("Bearer sk-a");
  }

  @Test
  void aWrongKeyIs401AndTenantsTakeNoRouterKey() throws Exception {
    replicas.add(new FakeReplica(0));
    router =
        new KvRouter(
            replicas.stream().map(FakeReplica::spec).toList(),
            options().withTenants(Optional.of(KEYS), NAMESPACES));

    assertThat(complete(prompt(8, 2), "sk-c", Optional.empty()).statusCode()).isEqualTo(401);
    assertThat(complete(prompt(8, 2), "", Optional.empty()).statusCode()).isEqualTo(401);
    assertThat(complete(prompt(8, 2), "sk-a", Optional.empty()).statusCode()).isEqualTo(200);
    assertThat(replicas.get(0).authorizations).containsExactly("Bearer sk-a");
    KvRouter.Options keyed =
        new KvRouter.Options(
            "127.0.0.1",
            0,
            PAGE,
            RouteScore.DEFAULT,
            RoutePolicy.PREFIX,
            Optional.of("k"),
            Optional.empty(),
            Duration.ofSeconds(2),
            Duration.ofSeconds(60));
    assertThatThrownBy(() -> keyed.withTenants(Optional.of(KEYS), NAMESPACES))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("drop --api-key and --replica-api-key");
  }

  @Test
  void withoutTenantsASaltedPromptIsMatchedInItsSaltsNamespaceOnly() throws Exception {
    for (int i = 0; i < 2; i++) {
      replicas.add(new FakeReplica(i));
    }
    router =
        new KvRouter(
            replicas.stream().map(FakeReplica::spec).toList(),
            options().withTenants(Optional.empty(), NAMESPACES));
    int[] p = prompt(32, 3);
    replicas
        .get(1)
        .caches(p, PAGE, CacheMedium.DEVICE, NAMESPACES.namespace("", Optional.of("mine")));
    awaitIndexed(1, 8);

    for (int i = 0; i < 3; i++) {
      assertThat(complete(p, "", Optional.of("mine")).body()).isEqualTo("{\"replica\":1}");
    }
    assertThat(router.index().match(router.blockHashes(p))[1][0])
        .as("the unsalted prompt has no blocks at replica 1")
        .isZero();
  }
}
