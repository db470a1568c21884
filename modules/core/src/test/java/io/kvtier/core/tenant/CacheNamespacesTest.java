package io.kvtier.core.tenant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How tenant and salt choose a namespace. */
class CacheNamespacesTest {
  private static final byte[] SECRET = "0123456789abcdef0123".getBytes(StandardCharsets.US_ASCII);

  @Test
  void tenantsAndSaltsGetNamespacesOfTheirOwnAndTheDefaultUnsaltedOneIsShared() {
    CacheNamespaces ns = CacheNamespaces.of(SECRET, Optional.empty());
    Set<Long> seen = new HashSet<>();
    for (String tenant : new String[] {"", "alice", "bob"}) {
      for (Optional<String> salt :
          new Optional[] {Optional.empty(), Optional.of("x"), Optional.of("")}) {
        long n = ns.namespace(tenant, salt);
        if (tenant.isEmpty() && salt.isEmpty()) {
          assertThat(n).isEqualTo(CacheNamespaces.SHARED);
        } else {
          assertThat(n).as("%s %s", tenant, salt).isNegative();
          assertThat(seen.add(n)).as("%s %s is its own", tenant, salt).isTrue();
        }
      }
    }
    // Lengths are framed: ("ab", "c") is not ("a", "bc").
    assertThat(ns.namespace("ab", Optional.of("c")))
        .isNotEqualTo(ns.namespace("a", Optional.of("bc")));
    assertThat(ns.namespace("alice", Optional.of("x")))
        .isEqualTo(ns.namespace("alice", Optional.of("x")));
  }

  @Test
  void theSameSecretGivesTheSameNamespacesAndAnotherOrARandomOneOthers() {
    CacheNamespaces a = CacheNamespaces.of(SECRET, Optional.empty());
    CacheNamespaces b = CacheNamespaces.of(SECRET.clone(), Optional.empty());
    byte[] other = SECRET.clone();
    other[0] ^= 1;
    long alice = a.namespace("alice", Optional.empty());

    assertThat(b.namespace("alice", Optional.empty())).isEqualTo(alice);
    assertThat(CacheNamespaces.of(other, Optional.empty()).namespace("alice", Optional.empty()))
        .isNotEqualTo(alice);
    assertThat(CacheNamespaces.random(Optional.empty()).namespace("alice", Optional.empty()))
        .isNotEqualTo(alice);
    assertThat(a.configured()).isTrue();
    assertThat(CacheNamespaces.random(Optional.empty()).configured()).isFalse();
  }

  @Test
  void theSharedSaltIsNamespaceZeroForEveryTenant() {
    CacheNamespaces ns = CacheNamespaces.of(SECRET, Optional.of("public"));

    assertThat(ns.namespace("alice", Optional.of("public"))).isZero();
    assertThat(ns.namespace("bob", Optional.of("public"))).isZero();
    assertThat(ns.namespace("", Optional.of("public"))).isZero();
    assertThat(ns.namespace("alice", Optional.of("Public"))).isNotZero();
    assertThatThrownBy(() -> CacheNamespaces.random(Optional.of("")))
        .hasMessageContaining("shared cache salt is empty");
  }

  @Test
  void aSecretFileIsItsBytesWithoutTrailingSpaceAndMustBeLongEnough(@TempDir Path dir)
      throws Exception {
    Path file = dir.resolve("secret");
    Files.writeString(file, "0123456789abcdef0123\n");
    assertThat(CacheNamespaces.readSecret(file)).isEqualTo(SECRET);

    Files.writeString(file, "short \n");
    assertThatThrownBy(() -> CacheNamespaces.readSecret(file))
        .hasMessageStartingWith(file + " holds 5 bytes, fewer than 16");
    Path missing = dir.resolve("missing");
    assertThatThrownBy(() -> CacheNamespaces.readSecret(missing))
        .hasMessage(missing + " cannot be read (NoSuchFileException)");
    assertThatThrownBy(() -> CacheNamespaces.of(new byte[3], Optional.empty()))
        .hasMessageStartingWith("the secret holds 3 bytes");
  }
}
