package io.kvtier.core.tenant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Key files and the key-to-tenant lookup. */
class ApiKeysTest {

  @Test
  void aKeyFileMapsEachKeyToItsTenant(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("keys");
    Files.writeString(
        file, "# key tenant\n\nsk-alice   alice\nsk-bob\tbob\n  sk-alice-new alice  \n");

    ApiKeys keys = ApiKeys.read(file);

    assertThat(keys.checked()).isTrue();
    assertThat(keys.perTenant()).isTrue();
    assertThat(keys.size()).isEqualTo(3);
    assertThat(keys.tenant("sk-alice")).contains("alice");
    assertThat(keys.tenant("sk-alice-new")).contains("alice");
    assertThat(keys.tenant("sk-bob")).contains("bob");
    assertThat(keys.tenant("sk-bo")).isEmpty();
    assertThat(keys.tenant("sk-bobb")).isEmpty();
    assertThat(keys.tenant("alice")).isEmpty();
    assertThat(keys.tenant("")).isEmpty();
  }

  @Test
  void oneKeyIsTheDefaultTenantAndNoKeyAcceptsEveryone() {
    assertThat(ApiKeys.single("s3cret").tenant("s3cret")).contains(ApiKeys.DEFAULT_TENANT);
    assertThat(ApiKeys.single("s3cret").tenant("s3cre")).isEmpty();
    assertThat(ApiKeys.single("s3cret").perTenant()).isFalse();
    assertThat(ApiKeys.open().checked()).isFalse();
    assertThat(ApiKeys.open().tenant("")).contains(ApiKeys.DEFAULT_TENANT);
    assertThatThrownBy(() -> ApiKeys.single(" ")).hasMessageContaining("empty");
  }

  @Test
  void aLineThatIsNotKeyAndTenantIsNamedWithoutEchoingIt() {
    assertThatThrownBy(() -> ApiKeys.parse("keys.txt", List.of("a x", "sk-secret-only")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "keys.txt line 2 has 1 field, not KEY TENANT (one key and its tenant's name,"
                + " separated by spaces)");
    assertThatThrownBy(() -> ApiKeys.parse("keys.txt", List.of("k t extra")))
        .hasMessageStartingWith("keys.txt line 1 has 3 fields, not KEY TENANT");
  }

  @Test
  void aRepeatedKeyIsRefusedEvenForTheSameTenant() {
    assertThatThrownBy(() -> ApiKeys.parse("keys.txt", List.of("k1 a", "", "k1 a")))
        .hasMessage("keys.txt line 3 repeats a key of an earlier line: each key names one tenant")
        .hasMessageNotContaining("k1");
  }

  @Test
  void aFileWithoutKeysOrUnreadableIsRefused(@TempDir Path dir) throws Exception {
    assertThatThrownBy(() -> ApiKeys.parse("keys.txt", List.of("# none", "")))
        .hasMessage("keys.txt holds no key: write one KEY TENANT per line");
    Path missing = dir.resolve("missing");
    assertThatThrownBy(() -> ApiKeys.read(missing))
        .hasMessage(missing + " cannot be read (NoSuchFileException)");
    Path binary = dir.resolve("binary");
    Files.write(binary, new byte[] {'k', ' ', 't', (byte) 0xFF});
    assertThatThrownBy(() -> ApiKeys.read(binary)).hasMessage(binary + " is not UTF-8 text");
    Path crlf = dir.resolve("crlf");
    Files.write(crlf, "k1 a\r\nk2 b\r\n".getBytes(StandardCharsets.UTF_8));
    assertThat(ApiKeys.read(crlf).tenant("k2")).contains("b");
  }
}
