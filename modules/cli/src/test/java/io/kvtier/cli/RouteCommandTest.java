package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/** {@code kvtier route}'s usage errors; the router itself is tested in modules/route. */
class RouteCommandTest {

  private static String[] run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int status = KvTierCli.run(new PrintWriter(out), new PrintWriter(err), args);
    return new String[] {Integer.toString(status), out.toString(), err.toString()};
  }

  @Test
  void theCommandIsListedAndAReplicaIsRequired() {
    assertThat(run("--help")[1]).contains("route");
    String[] none = run("route");
    assertThat(none[0]).isEqualTo("2");
    assertThat(none[2]).contains("--replica");
  }

  @Test
  void aBadReplicaOrWeightIsAUsageErrorThatSaysTheForm() {
    String[] bad = run("route", "--replica", "http://h:8000");
    assertThat(bad[0]).isEqualTo("2");
    assertThat(bad[2]).contains("HTTP_BASE,EVENTS_ENDPOINT[,REPLAY_ENDPOINT]");
    String[] weight = run("route", "--replica", "http://h:8000,tcp://h:5557", "--host-weight", "3");
    assertThat(weight[0]).isEqualTo("2");
    assertThat(weight[2]).contains("hostWeight=3.0");
  }

  @Test
  void aBadPolicyOrARingbufferWithoutAClusterIsAUsageError() {
    String[] policy = run("route", "--replica", "http://h:8000,tcp://h:5557", "--policy", "random");
    assertThat(policy[0]).isEqualTo("2");
    assertThat(policy[2]).contains("--policy random", "[prefix, round-robin]");
    String[] ring = run("route", "--port", "0", "--replica", "http://h:8000,hazelcast:events-0");
    assertThat(ring[0]).isEqualTo("2");
    assertThat(ring[2]).contains("--hazelcast-addresses");
  }
}
