package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/** {@code kvtier cp-member}: what it accepts before it starts a member. */
class CpMemberCommandTest {

  @Test
  void aSettingOutsideTheHazelcastNamespaceIsAUsageError() {
    StringWriter err = new StringWriter();
    int status =
        KvTierCli.run(
            new PrintWriter(new StringWriter()), new PrintWriter(err), "cp-member", "port=5801");

    assertThat(status).isEqualTo(2);
    assertThat(err.toString())
        .contains("setting 'port=5801' is not hazelcast.KEY=VALUE")
        .contains("see `kvtier cp-member --help`");
  }

  @Test
  void theMemberEntryPointIsFoundOnThePath() {
    // the cli depends on the hazelcast module at run time, so its tests see it too
    assertThat(CpMemberCommand.entryPoint()).isPresent();
  }
}
