package io.kvtier.cli;

import static io.kvtier.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KvTierCliTest {

  @Test
  void helpListsTheSubcommands() {
    CliRun help = run("--help");

    assertThat(help.status()).isZero();
    assertThat(help.out()).contains("Usage: kvtier").contains("backends").contains("help");
  }

  @Test
  void backendsListsTheSimulatedProvidersAsAvailable() {
    CliRun backends = run("backends");

    assertThat(backends.status()).isZero();
    assertThat(backends.err()).isEmpty();
    List<String> lines = backends.out().lines().toList();
    assertThat(lines.get(0).split("\\s{2,}"))
        .containsExactly("SPI", "NAME", "STATUS", "MODULE", "CLASS", "REASON");
    assertThat(lines)
        .anySatisfy(
            l ->
                assertThat(l)
                    .matches(
                        "device +sim +available +io\\.kvtier\\.backend\\.sim +io\\.kvtier\\.backend\\.sim\\."
                            + "\\w+ .*"))
        .anySatisfy(
            l -> assertThat(l).matches("host +sim +available +io\\.kvtier\\.backend\\.sim .*"))
        .anySatisfy(
            l ->
                assertThat(l)
                    .matches("collective +local +available +io\\.kvtier\\.backend\\.sim .*"))
        .anySatisfy(l -> assertThat(l).matches("store +memory +available +io\\.kvtier\\.store .*"))
        // No GPU on the test machines: the reason names the missing driver.
        .anySatisfy(
            l ->
                assertThat(l)
                    .matches(
                        "(device +cuda +available .*|device +cuda +unavailable .*libcuda\\.so\\.1.*)"));
  }

  /**
   * The sample table of docs/CONFIGURATION.md lists the providers that {@code kvtier backends}
   * lists today.
   */
  @Test
  void theDocsBackendsSampleHasTodaysRows() throws java.io.IOException {
    String readme =
        java.nio.file.Files.readString(java.nio.file.Path.of("../../docs/CONFIGURATION.md"));
    int start = readme.indexOf("```\nSPI ");
    assertThat(start).as("the sample table in docs/CONFIGURATION.md").isPositive();
    String sample = readme.substring(start + 4, readme.indexOf("```", start + 4));
    CliRun backends = run("backends");
    assertThat(rows(sample)).isEqualTo(rows(backends.out()));
  }

  /** SPI and NAME of every row: the columns that do not depend on the machine. */
  private static List<String> rows(String table) {
    return table.lines().skip(1).map(l -> l.split("\\s{2,}")).map(c -> c[0] + " " + c[1]).toList();
  }

  @Test
  void backendsLeavesTheTestingProvidersOutUnlessAskedFor() {
    CliRun plain = run("backends");
    CliRun json = run("backends", "--json");
    CliRun testing = run("backends", "--testing");

    assertThat(plain.status()).isZero();
    assertThat(plain.out()).doesNotContain("asserting");
    assertThat(json.out()).doesNotContain("asserting");
    assertThat(testing.status()).isZero();
    assertThat(testing.out().lines())
        .anySatisfy(
            l -> assertThat(l).matches("device +asserting +available +io\\.kvtier\\.asserting .*"))
        .anySatisfy(
            l -> assertThat(l).matches("host +asserting +available +io\\.kvtier\\.asserting .*"))
        .anySatisfy(
            l -> assertThat(l).matches("store +faulty +available +io\\.kvtier\\.asserting .*"));
    assertThat(plain.out()).doesNotContain("faulty");
  }

  @Test
  void backendsJsonIsValidAndCarriesTheSameFacts() {
    CliRun backends = run("backends", "--json");

    assertThat(backends.status()).isZero();
    List<Object> spis = array(object(TestJson.parse(backends.out())).get("spis"));
    assertThat(spis.stream().map(s -> object(s).get("spi")))
        .containsExactly("device", "host", "collective", "store");
    Map<String, Object> device = object(spis.get(0));
    assertThat(device)
        .containsEntry("interface", "io.kvtier.spi.DeviceMemoryProvider")
        .containsEntry("configKey", "kvtier.device")
        .containsEntry("autoOrder", List.of("cuda", "sim"))
        .containsEntry("error", null);
    assertThat(provider(spis, 0, "sim"))
        .containsEntry("available", true)
        .containsEntry("status", "available")
        .containsEntry("module", "io.kvtier.backend.sim");
    assertThat(provider(spis, 1, "sim")).containsEntry("available", true);
    assertThat(provider(spis, 2, "local")).containsEntry("available", true);
    assertThat(provider(spis, 3, "file")).containsEntry("available", true);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> object(Object json) {
    assertThat(json).isInstanceOf(Map.class);
    return (Map<String, Object>) json;
  }

  @SuppressWarnings("unchecked")
  private static List<Object> array(Object json) {
    assertThat(json).isInstanceOf(List.class);
    return (List<Object>) json;
  }

  private static Map<String, Object> provider(List<Object> spis, int index, String name) {
    List<Object> providers = array(object(spis.get(index)).get("providers"));
    return providers.stream()
        .map(KvTierCliTest::object)
        .filter(p -> name.equals(p.get("name")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no provider " + name + " in " + providers));
  }

  @Test
  void anUnknownSubcommandIsAUsageErrorWithoutAStackTrace() {
    CliRun unknown = run("frobnicate");

    assertThat(unknown.status()).isEqualTo(2);
    assertThat(unknown.firstErrLine())
        .startsWith("kvtier: Unmatched argument")
        .contains("frobnicate");
    assertThat(unknown.err()).contains("see `kvtier --help`");
    assertThat(unknown.err()).doesNotContain("Exception").doesNotContain("\tat ");
    assertThat(unknown.out()).isEmpty();
  }

  @Test
  void anUnknownOptionIsAUsageError() {
    CliRun unknown = run("backends", "--xml");

    assertThat(unknown.status()).isEqualTo(2);
    assertThat(unknown.err())
        .startsWith("kvtier backends: Unknown option: '--xml'")
        .contains("see `kvtier backends --help`")
        .doesNotContain("Usage:");
    assertThat(unknown.err()).doesNotContain("\tat ");
  }

  @Test
  void noSubcommandIsAUsageError() {
    CliRun none = run();

    assertThat(none.status()).isEqualTo(2);
    assertThat(none.err()).contains("Missing subcommand").contains("backends");
  }

  @Test
  void theVersionNamesKvtier() {
    CliRun version = run("--version");

    assertThat(version.status()).isZero();
    assertThat(version.out()).startsWith("kvtier ");
  }
}
