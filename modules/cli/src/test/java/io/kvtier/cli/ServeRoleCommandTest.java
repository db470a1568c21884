package io.kvtier.cli;

import static io.kvtier.cli.CliRun.assertServeUsage;
import static io.kvtier.cli.CliRun.serve;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvtier serve --role prefill|decode|both} (docs/SERVE.md, "Prefill and decode replicas"):
 * a prefill or decode replica without an L3 store the replicas share, or without prefix caching,
 * and an unknown role, are one line on stderr and exit status 2 saying what to add or drop.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServeRoleCommandTest {

  @Test
  void anUnknownRoleOrABlankReplicaIdExits2() {
    assertServeUsage(
        serve("--role", "middle", "--port", "0"),
        "--role=middle is not a role: give one of prefill, decode, both");
    assertServeUsage(
        serve("--role", "prefill", "--replica-id", " ", "--port", "0"),
        "--replica-id must not be blank");
  }

  @Test
  void aPrefillOrDecodeReplicaWithoutASharedStoreExits2SayingWhatToAdd() {
    assertServeUsage(
        serve("--role", "prefill", "--port", "0"),
        "--role prefill moves prompts through an L3 store the prefill and decode replicas share,"
            + " but the L3 store is none: add --l3 file --l3-dir DIR (replicas on one machine) or"
            + " --l3 hazelcast (across machines)");
    assertServeUsage(
        serve("--role", "decode", "--l3", "memory", "--port", "0"),
        "--role decode moves prompts through an L3 store the prefill and decode replicas share,"
            + " but the L3 store is memory (this process's own): add --l3 file --l3-dir DIR");
  }

  @Test
  void aFileStoreInATemporaryDirectoryIsNotShared() {
    assertServeUsage(
        serve("--role", "prefill", "--l3", "file", "--port", "0"),
        "--role prefill with --l3 file needs the directory the replicas share: add --l3-dir DIR,"
            + " the same on every prefill and decode replica");
  }

  @Test
  void aReplicaWithoutPrefixCachingExits2(@TempDir Path dir) {
    assertServeUsage(
        serve(
            "--role",
            "decode",
            "--l3",
            "file",
            "--l3-dir",
            dir.toString(),
            "--no-prefix-cache",
            "--port",
            "0"),
        "--role decode finds the published prompt through the prefix cache, but"
            + " --no-prefix-cache turns it off: drop --no-prefix-cache");
  }
}
