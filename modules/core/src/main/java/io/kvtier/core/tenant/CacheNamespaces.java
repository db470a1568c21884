package io.kvtier.core.tenant;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Which cache namespace a request's prefix is cached in (docs/SERVE.md, "Tenants"): chosen by its
 * tenant (from its API key, {@link ApiKeys}) and its {@code cache_salt}, so that a tenant can
 * neither hit nor time another's cached prefixes. The namespace enters the first page's chained
 * hash (CACHE.md §1), so it separates the device and host tiers' trees, the L3 store's keys and
 * the block hashes of KV events alike.
 *
 * <ul>
 *   <li>A request without a salt of the default tenant (no key file): namespace {@link #SHARED}
 *       (0), as before tenants existed.
 *   <li>A request whose {@code cache_salt} is the configured shared salt: namespace {@link
 *       #SHARED}, whatever its tenant: the namespace a deployment shares on purpose (a public
 *       system prompt).
 *   <li>Any other request: {@code HMAC-SHA256(secret, "kvtier-cache-namespace" 0x00 | tenant |
 *       salt)} (tenant and salt each as a 4-byte little-endian length and its UTF-8 bytes, the
 *       salt's length -1 when there is none), its first 8 bytes little-endian, the top bit set.
 *       Keyed, so a client who knows another tenant's name and salt still cannot compute or aim at
 *       its namespace; the top bit keeps it apart from 0 and from the small per-request namespaces
 *       of {@code --no-prefix-cache}.
 * </ul>
 *
 * <p>The secret is per deployment: every process that computes namespaces for one cache must
 * have the same (the replicas sharing an L3 store, a router that routes by prefix, a server
 * restarted over a persistent store); a secret generated at start is good only for one process's
 * life. Ranks of one server need none of their own: rank 0 computes a request's namespace and
 * broadcasts it with the request.
 */
public final class CacheNamespaces {
  /** The namespace all tenants share: unsalted requests without tenants, and the shared salt. */
  public static final long SHARED = 0;

  /** The fewest bytes a configured secret must hold. */
  public static final int MIN_SECRET_BYTES = 16;

  private static final byte[] LABEL =
      "kvtier-cache-namespace\0".getBytes(StandardCharsets.US_ASCII);

  private final SecretKeySpec key;
  private final Optional<String> sharedSalt;
  private final boolean configured;

  private CacheNamespaces(byte[] secret, Optional<String> sharedSalt, boolean configured) {
    this.key = new SecretKeySpec(secret, "HmacSHA256");
    this.sharedSalt = Objects.requireNonNull(sharedSalt, "sharedSalt");
    this.configured = configured;
    if (sharedSalt.isPresent() && sharedSalt.get().isEmpty()) {
      throw new IllegalArgumentException("the shared cache salt is empty: give one, or none");
    }
  }

  /**
   * Namespaces keyed by a configured secret.
   *
   * @param secret at least {@value #MIN_SECRET_BYTES} bytes
   * @param sharedSalt the {@code cache_salt} that names the shared namespace, or empty
   * @return the namespaces
   */
  public static CacheNamespaces of(byte[] secret, Optional<String> sharedSalt) {
    Objects.requireNonNull(secret, "secret");
    if (secret.length < MIN_SECRET_BYTES) {
      throw new IllegalArgumentException(
          "the secret holds "
              + secret.length
              + " bytes, fewer than "
              + MIN_SECRET_BYTES
              + ": make one with head -c 32 /dev/urandom | base64");
    }
    return new CacheNamespaces(secret.clone(), sharedSalt, true);
  }

  /**
   * Namespaces keyed by a secret made now, at random: good for this process only.
   *
   * @param sharedSalt the {@code cache_salt} that names the shared namespace, or empty
   * @return the namespaces
   */
  public static CacheNamespaces random(Optional<String> sharedSalt) {
    byte[] secret = new byte[32];
    new SecureRandom().nextBytes(secret);
    return new CacheNamespaces(secret, sharedSalt, false);
  }

  /**
   * Reads a secret file: its bytes without trailing white space (a newline an editor adds).
   *
   * @param file the file
   * @return the secret, at least {@value #MIN_SECRET_BYTES} bytes
   * @throws IllegalArgumentException naming the file if it cannot be read or is too short
   */
  public static byte[] readSecret(Path file) {
    Objects.requireNonNull(file, "file");
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          file + " cannot be read (" + e.getClass().getSimpleName() + ")");
    }
    int end = bytes.length;
    while (end > 0 && Character.isWhitespace(bytes[end - 1])) {
      end--;
    }
    if (end < MIN_SECRET_BYTES) {
      throw new IllegalArgumentException(
          file
              + " holds "
              + end
              + " bytes, fewer than "
              + MIN_SECRET_BYTES
              + ": make a secret with head -c 32 /dev/urandom | base64 > "
              + file);
    }
    return Arrays.copyOf(bytes, end);
  }

  /**
   * Whether the secret was configured, rather than made at start.
   *
   * @return true for {@link #of}
   */
  public boolean configured() {
    return configured;
  }

  /**
   * The {@code cache_salt} that names the shared namespace.
   *
   * @return the salt, or empty
   */
  public Optional<String> sharedSalt() {
    return sharedSalt;
  }

  /**
   * The namespace of a request.
   *
   * @param tenant the request's tenant ({@link ApiKeys#tenant}); {@link ApiKeys#DEFAULT_TENANT}
   *     without a key file
   * @param salt the request's {@code cache_salt}, or empty
   * @return the namespace
   */
  public long namespace(String tenant, Optional<String> salt) {
    Objects.requireNonNull(tenant, "tenant");
    Objects.requireNonNull(salt, "salt");
    if (salt.isPresent() && salt.equals(sharedSalt)) {
      return SHARED;
    }
    if (salt.isEmpty() && tenant.equals(ApiKeys.DEFAULT_TENANT)) {
      return SHARED;
    }
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(key);
      mac.update(LABEL);
      field(mac, tenant.getBytes(StandardCharsets.UTF_8));
      if (salt.isPresent()) {
        field(mac, salt.get().getBytes(StandardCharsets.UTF_8));
      } else {
        mac.update(intBytes(-1));
      }
      byte[] h = mac.doFinal();
      long ns = 0;
      for (int i = 0; i < 8; i++) {
        ns |= (h[i] & 0xFFL) << (8 * i);
      }
      return ns | Long.MIN_VALUE;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("every JDK has HmacSHA256", e);
    }
  }

  private static void field(Mac mac, byte[] bytes) {
    mac.update(intBytes(bytes.length));
    mac.update(bytes);
  }

  private static byte[] intBytes(int v) {
    return new byte[] {(byte) v, (byte) (v >>> 8), (byte) (v >>> 16), (byte) (v >>> 24)};
  }
}
