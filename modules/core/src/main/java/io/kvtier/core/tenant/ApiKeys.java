package io.kvtier.core.tenant;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The API keys a server accepts and the tenant each one names (docs/SERVE.md, "Tenants"): none
 * (every request is the default tenant), one key ({@code --api-key}, the default tenant), or a
 * key file ({@code --api-key-file}, one {@code KEY TENANT} per line).
 *
 * <p>A key given by a client is compared in constant time: its SHA-256 is compared with the
 * SHA-256 of every known key by {@link MessageDigest#isEqual}, all of them every time, so the
 * time an answer takes depends on how many keys there are, not on which key matched nor on how
 * much of a wrong key was right.
 */
public final class ApiKeys {
  /** The tenant of requests when no key file names tenants. */
  public static final String DEFAULT_TENANT = "";

  private static final ApiKeys OPEN = new ApiKeys(new byte[0][], new String[0], false, false);

  private final byte[][] digests;
  private final String[] tenants;
  private final boolean checked;
  private final boolean perTenant;

  private ApiKeys(byte[][] digests, String[] tenants, boolean checked, boolean perTenant) {
    this.digests = digests;
    this.tenants = tenants;
    this.checked = checked;
    this.perTenant = perTenant;
  }

  /**
   * No key: every request is accepted, as the default tenant.
   *
   * @return the keys
   */
  public static ApiKeys open() {
    return OPEN;
  }

  /**
   * One key, of the default tenant.
   *
   * @param key the key, not blank
   * @return the keys
   */
  public static ApiKeys single(String key) {
    Objects.requireNonNull(key, "key");
    if (key.isBlank()) {
      throw new IllegalArgumentException("the API key is empty: give one, or none");
    }
    return new ApiKeys(new byte[][] {sha256(key)}, new String[] {DEFAULT_TENANT}, true, false);
  }

  /**
   * Reads a key file: one {@code KEY TENANT} per line, separated by spaces or tabs; blank lines
   * and lines starting with {@code #} are skipped. Several keys may name one tenant (a key being
   * replaced); one key may appear once.
   *
   * @param file the file, UTF-8
   * @return the keys
   * @throws IllegalArgumentException naming the file, and the line where it is one, if the file
   *     cannot be read, holds a line that is not {@code KEY TENANT}, a key twice, or no key
   */
  public static ApiKeys read(Path file) {
    Objects.requireNonNull(file, "file");
    List<String> lines;
    try {
      String text =
          StandardCharsets.UTF_8
              .newDecoder()
              .decode(java.nio.ByteBuffer.wrap(Files.readAllBytes(file)))
              .toString();
      lines = List.of(text.split("\n", -1));
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException(file + " is not UTF-8 text");
    } catch (IOException e) {
      throw new IllegalArgumentException(
          file + " cannot be read (" + e.getClass().getSimpleName() + ")");
    }
    return parse(file.toString(), lines);
  }

  /**
   * Parses the lines of a key file.
   *
   * @param source the file's name, for messages
   * @param lines its lines
   * @return the keys
   * @throws IllegalArgumentException as {@link #read}
   */
  public static ApiKeys parse(String source, List<String> lines) {
    List<byte[]> digests = new ArrayList<>();
    List<String> tenants = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] fields = line.split("[ \t]+");
      if (fields.length != 2) {
        // The line is not echoed: it may hold a key.
        throw new IllegalArgumentException(
            source
                + " line "
                + (i + 1)
                + " has "
                + fields.length
                + (fields.length == 1 ? " field" : " fields")
                + ", not KEY TENANT (one key and its tenant's name, separated by spaces)");
      }
      byte[] digest = sha256(fields[0]);
      if (!seen.add(java.util.HexFormat.of().formatHex(digest))) {
        throw new IllegalArgumentException(
            source
                + " line "
                + (i + 1)
                + " repeats a key of an earlier line: each key names one tenant");
      }
      digests.add(digest);
      tenants.add(fields[1]);
    }
    if (digests.isEmpty()) {
      throw new IllegalArgumentException(source + " holds no key: write one KEY TENANT per line");
    }
    return new ApiKeys(digests.toArray(new byte[0][]), tenants.toArray(new String[0]), true, true);
  }

  /**
   * Whether requests must send a key.
   *
   * @return false for {@link #open()}
   */
  public boolean checked() {
    return checked;
  }

  /**
   * Whether the keys name tenants (a key file), rather than all being the default tenant.
   *
   * @return true for keys read from a file
   */
  public boolean perTenant() {
    return perTenant;
  }

  /**
   * The tenant of a key a client sent, compared in constant time with every known key.
   *
   * @param given the key sent ({@code Authorization: Bearer KEY}), empty if none
   * @return the tenant ({@link #DEFAULT_TENANT} without a key file), or empty if the key is
   *     wrong or missing where one is needed
   */
  public Optional<String> tenant(String given) {
    Objects.requireNonNull(given, "given");
    if (!checked) {
      return Optional.of(DEFAULT_TENANT);
    }
    byte[] digest = sha256(given);
    int found = -1;
    for (int i = 0; i < digests.length; i++) {
      // Every key is compared, the match or not: no early exit.
      boolean equal = MessageDigest.isEqual(digest, digests[i]);
      found = equal ? i : found;
    }
    return found < 0 || given.isEmpty() ? Optional.empty() : Optional.of(tenants[found]);
  }

  /**
   * The number of keys.
   *
   * @return 0 for {@link #open()}
   */
  public int size() {
    return digests.length;
  }

  private static byte[] sha256(String text) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
