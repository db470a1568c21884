package io.kvtier.cli;

import static io.kvtier.cli.CliRun.assertServeUsage;
import static io.kvtier.cli.CliRun.serve;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.server.CompletionServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code kvtier serve}'s tenant options: {@code --api-key-file}, {@code --namespace-secret-file}
 * and {@code --shared-cache-salt} serve tenants apart, and each unusable value is one line on
 * stderr and exit status 2 (the router's are usage errors too).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServeTenantsCommandTest {

  @Test
  void anUnusableKeyFileExits2WithOneClearLine(@TempDir Path dir) throws Exception {
    Path keys = dir.resolve("keys");
    Files.writeString(keys, "sk-a alice\nsk-b\n");
    assertServeUsage(
        serve("--api-key-file", keys.toString()),
        "--api-key-file " + keys + " line 2 has 1 field, not KEY TENANT");
    assertThat(serve("--api-key-file", keys.toString()).err()).doesNotContain("sk-b");

    Files.writeString(keys, "sk-a alice\nsk-a bob\n");
    assertServeUsage(
        serve("--api-key-file", keys.toString()),
        "--api-key-file " + keys + " line 2 repeats a key of an earlier line");

    Files.writeString(keys, "# nobody yet\n");
    assertServeUsage(
        serve("--api-key-file", keys.toString()), "--api-key-file " + keys + " holds no key");

    Path missing = dir.resolve("missing");
    assertServeUsage(
        serve("--api-key-file", missing.toString()),
        "--api-key-file " + missing + " cannot be read (NoSuchFileException)");

    Files.writeString(keys, "sk-a alice\n");
    assertServeUsage(
        serve("--api-key-file", keys.toString(), "--api-key", "k"),
        "--api-key-file and --api-key (or KVTIER_API_KEY) both give keys");
  }

  @Test
  void anUnusableSecretOrSharedSaltExits2WithOneClearLine(@TempDir Path dir) throws Exception {
    Path secret = dir.resolve("secret");
    Files.writeString(secret, "too short\n");
    assertServeUsage(
        serve("--namespace-secret-file", secret.toString()),
        "--namespace-secret-file " + secret + " holds 9 bytes, fewer than 16");
    Path missing = dir.resolve("missing");
    assertServeUsage(
        serve("--namespace-secret-file", missing.toString()),
        "--namespace-secret-file " + missing + " cannot be read (NoSuchFileException)");
    assertServeUsage(serve("--shared-cache-salt", ""), "--shared-cache-salt is empty");
  }

  @Test
  void theRoutersTenantOptionsAreUsageErrorsToo(@TempDir Path dir) throws Exception {
    Path keys = dir.resolve("keys");
    Files.writeString(keys, "sk-a alice\nsk-a bob\n");
    String replica = "http://127.0.0.1:1,tcp://127.0.0.1:2";
    CliRun duplicate = CliRun.run("route", "--replica", replica, "--api-key-file", keys.toString());
    assertThat(duplicate.status()).isEqualTo(2);
    assertThat(duplicate.err()).contains("--api-key-file " + keys + " line 2 repeats a key");
    Files.writeString(keys, "sk-a alice\n");
    CliRun both =
        CliRun.run(
            "route", "--replica", replica, "--api-key-file", keys.toString(), "--api-key", "k");
    assertThat(both.status()).isEqualTo(2);
    assertThat(both.err()).contains("drop --api-key and --replica-api-key");
    CliRun secret =
        CliRun.run("route", "--replica", replica, "--namespace-secret-file", keys.toString());
    assertThat(secret.status()).isEqualTo(2);
    assertThat(secret.err()).contains("--namespace-secret-file " + keys + " holds 10 bytes");
  }

  @Test
  void tenantsOfAKeyFileAreServedApartAndTheSharedSaltSharesOnPurpose(@TempDir Path dir)
      throws Exception {
    Path keys = dir.resolve("keys");
    Files.writeString(keys, "# KEY TENANT\nsk-a alice\nsk-b bob\n");
    Path secret = dir.resolve("secret");
    Files.writeString(secret, "0123456789abcdef0123456789abcdef\n");
    Path config = dir.resolve("kvtier.properties");
    Files.writeString(
        config,
        "kvtier.device=sim\nkvtier.host=sim\nkvtier.page-size=4\n"
            + "kvtier.device-pages=64\nkvtier.host-ratio=2\nkvtier.write-policy=write_through\n");
    ServeCommand command = new ServeCommand();
    StringWriter err = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(new StringWriter(), true));
    cli.setErr(new PrintWriter(err, true));
    Thread running =
        Thread.ofPlatform()
            .start(
                () ->
                    cli.execute(
                        "--port",
                        "0",
                        "--config",
                        config.toString(),
                        "--api-key-file",
                        keys.toString(),
                        "--namespace-secret-file",
                        secret.toString(),
                        "--shared-cache-salt",
                        "public"));
    CompletionServer server;
    while ((server = command.server()) == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", err).isTrue();
      Thread.sleep(5);
    }
    URI base = URI.create("http://127.0.0.1:" + server.address().getPort());
    String prompt = "[" + "7, ".repeat(31) + "7]";
    try (HttpClient client = HttpClient.newHttpClient()) {
      assertThat(cached(client, base, "sk-a", prompt, "")).isZero();
      assertThat(cached(client, base, "sk-a", prompt, "")).isPositive();
      assertThat(cached(client, base, "sk-b", prompt, "")).isZero();
      String shared = ", \"cache_salt\": \"public\"";
      assertThat(cached(client, base, "sk-a", prompt, shared)).isZero();
      assertThat(cached(client, base, "sk-b", prompt, shared)).isPositive();
      HttpResponse<String> wrong =
          client.send(
              HttpRequest.newBuilder(base.resolve("/v1/models"))
                  .header("Authorization", "Bearer sk-c")
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(wrong.statusCode()).isEqualTo(401);
    } finally {
      command.stop();
      running.join();
    }
  }

  private static long cached(HttpClient client, URI base, String key, String prompt, String salt)
      throws Exception {
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .header("Authorization", "Bearer " + key)
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"model\": \"kvtier-tiny\", \"prompt\": "
                            + prompt
                            + ", \"max_tokens\": 2"
                            + salt
                            + "}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    Matcher m = Pattern.compile("\"cached_tokens\":(\\d+)").matcher(r.body());
    assertThat(m.find()).as(r.body()).isTrue();
    return Long.parseLong(m.group(1));
  }

  @Test
  void tenantsOverAnL3StoreWithoutAConfiguredSecretAreWarnedAbout(@TempDir Path dir)
      throws Exception {
    Path keys = dir.resolve("keys");
    Files.writeString(keys, "sk-a alice\n");
    ServeCommand command = new ServeCommand();
    StringWriter err = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(new StringWriter(), true));
    cli.setErr(new PrintWriter(err, true));
    Thread running =
        Thread.ofPlatform()
            .start(
                () ->
                    cli.execute(
                        "--port", "0", "--l3", "memory", "--api-key-file", keys.toString()));
    while (command.server() == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", err).isTrue();
      Thread.sleep(5);
    }
    command.stop();
    running.join();
    assertThat(err.toString())
        .contains("warning: the tenants' prefixes go to the L3 store")
        .contains("--namespace-secret-file");
  }
}
