package io.kvtier.spi.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class ConfigReaderTest {

  private enum Mode {
    EMBEDDED,
    CLIENT
  }

  @Test
  void everyGetterParsesItsKeyOrGivesTheDefault() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("t.string", "  a b  ");
    p.put("t.int", "7");
    p.put("t.long", "-42");
    p.put("t.double", "2.5");
    p.put("t.boolean", "TRUE");
    p.put("t.enum", "client");
    p.put("t.bytes", "64MiB");
    p.put("t.rate", "1GB/s");
    p.put("t.duration", "1.5ms");
    p.put("other.key", "ignored");
    ConfigReader r = ConfigReader.of("t", p);
    assertThat(r.namespace()).isEqualTo("t");
    assertThat(r.getString("t.string", "x")).isEqualTo("a b");
    assertThat(r.getInt("t.int", 0)).isEqualTo(7);
    assertThat(r.getInt("t.int", 0, 1, 8)).isEqualTo(7);
    assertThat(r.getLong("t.long", 0)).isEqualTo(-42);
    assertThat(r.getDouble("t.double", 0)).isEqualTo(2.5);
    assertThat(r.getBoolean("t.boolean", false)).isTrue();
    assertThat(r.getEnum("t.enum", Mode.class, "mode", Mode.EMBEDDED)).isEqualTo(Mode.CLIENT);
    assertThat(r.getBytes("t.bytes", 0)).isEqualTo(64L << 20);
    assertThat(r.getPositiveBytes("t.bytes", 0)).isEqualTo(64L << 20);
    assertThat(r.getRate("t.rate", 1)).isEqualTo(1_000_000_000L);
    assertThat(r.getDuration("t.duration", Duration.ZERO)).isEqualTo(Duration.ofNanos(1_500_000));
    assertThat(r.getPositiveDuration("t.duration", Duration.ZERO))
        .isEqualTo(Duration.ofNanos(1_500_000));
    assertThat(r.get("t.int", Integer::parseInt)).contains(7);
    r.checkUnknownKeys();

    ConfigReader empty = ConfigReader.of("t", Map.of());
    assertThat(empty.getString("t.string", "x")).isEqualTo("x");
    assertThat(empty.getInt("t.int", 3, 1, 8)).isEqualTo(3);
    assertThat(empty.getLong("t.long", 4)).isEqualTo(4);
    assertThat(empty.getDouble("t.double", 0.5)).isEqualTo(0.5);
    assertThat(empty.getBoolean("t.boolean", true)).isTrue();
    assertThat(empty.getEnum("t.enum", Mode.class, "mode", Mode.EMBEDDED)).isEqualTo(Mode.EMBEDDED);
    assertThat(empty.getBytes("t.bytes", 5)).isEqualTo(5);
    assertThat(empty.getPositiveBytes("t.bytes", 6)).isEqualTo(6);
    assertThat(empty.getRate("t.rate", 7)).isEqualTo(7);
    assertThat(empty.getDuration("t.duration", Duration.ofSeconds(1)))
        .isEqualTo(Duration.ofSeconds(1));
    assertThat(empty.getPositiveDuration("t.duration", Duration.ofSeconds(2)))
        .isEqualTo(Duration.ofSeconds(2));
    assertThat(empty.get("t.string")).isEmpty();
    assertThat(empty.isSet("t.string")).isFalse();
  }

  @Test
  void readsProperties() {
    Properties properties = new Properties();
    properties.setProperty("t.int", "3");
    properties.setProperty("u.int", "4");
    ConfigReader r = ConfigReader.of("t", properties);
    assertThat(r.getInt("t.int", 0)).isEqualTo(3);
    r.checkUnknownKeys();
  }

  @Test
  void badValuesNameTheKeyTheValueAndWhatIsAllowed() {
    ConfigReader r =
        ConfigReader.of(
            "t",
            Map.of(
                "t.int",
                "9",
                "t.word",
                "x",
                "t.bytes",
                "0",
                "t.duration",
                "0s",
                "t.enum",
                "server"));
    assertThatThrownBy(() -> r.getInt("t.int", 0, 1, 8)).hasMessage("t.int=9 must be in [1, 8]");
    assertThatThrownBy(() -> r.getInt("t.word", 0))
        .hasMessageContaining("t.word='x' is not a whole number");
    assertThatThrownBy(() -> r.getLong("t.word", 0))
        .hasMessageContaining("t.word='x' is not a whole number");
    assertThatThrownBy(() -> r.getDouble("t.word", 0)).hasMessageContaining("t.word='x'");
    assertThatThrownBy(() -> r.getBoolean("t.word", false))
        .hasMessage("t.word='x' is not true or false");
    assertThatThrownBy(() -> r.getBytes("t.word", 0)).hasMessageContaining("is not a size");
    assertThatThrownBy(() -> r.getRate("t.word", 1)).hasMessageContaining("not a transfer rate");
    assertThatThrownBy(() -> r.getDuration("t.word", Duration.ZERO))
        .hasMessageContaining("t.word='x' is not a duration");
    assertThatThrownBy(() -> r.getPositiveBytes("t.bytes", 1))
        .hasMessage("t.bytes=0 must be positive");
    assertThatThrownBy(() -> r.getPositiveDuration("t.duration", Duration.ofSeconds(1)))
        .hasMessage("t.duration=0s must be positive");
    assertThatThrownBy(() -> r.getEnum("t.enum", Mode.class, "mode", Mode.EMBEDDED))
        .hasMessage("t.enum: unknown mode 'server': use one of embedded, client");
    assertThatThrownBy(
            () ->
                r.get(
                    "t.word",
                    v -> {
                      throw new IllegalArgumentException("not a list");
                    }))
        .hasMessage("t.word: not a list");
  }

  @Test
  void aValueErrorSaysWhereTheValueCameFrom() {
    ConfigReader r =
        ConfigReader.of(
            "kvtier",
            Map.of("kvtier.page-size", "many", "kvtier.ranks", "0"),
            Map.of("kvtier.page-size", "system properties"));
    assertThatThrownBy(() -> r.getInt("kvtier.page-size", 16, 1, Integer.MAX_VALUE))
        .hasMessage(
            "kvtier.page-size='many' is not a whole number (from 1 to 2147483647)"
                + " [from system properties]");
    assertThatThrownBy(() -> r.getInt("kvtier.ranks", 1, 1, Integer.MAX_VALUE))
        .hasMessage("kvtier.ranks=0 must be >= 1");
  }

  @Test
  void knownKeysAreTheKeysAskedForInOrder() {
    ConfigReader r = ConfigReader.of("t", Map.of("t.b", "1"));
    r.getInt("t.b", 0);
    r.isSet("t.a");
    r.get("t.c");
    r.getInt("t.b", 0);
    assertThat(r.knownKeys()).containsExactly("t.b", "t.a", "t.c");
    assertThat(r.unknownKeys()).isEmpty();
  }

  @Test
  void anUnknownKeyIsNamedWithTheClosestKnownOneAndItsOrigin() {
    ConfigReader r =
        ConfigReader.of(
            "sim",
            Map.of("sim.sead", "1", "simulator.x", "2", "kvtier.device", "sim"),
            Map.of("sim.sead", "builder"));
    r.getLong("sim.seed", 0);
    r.getDouble("sim.jitter", 0);
    assertThat(r.unknownKeys()).containsExactly("sim.sead");
    assertThatThrownBy(r::checkUnknownKeys)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "unknown key 'sim.sead' (in builder): did you mean sim.seed? The sim.* keys"
                + " are: sim.seed, sim.jitter");
  }

  @Test
  void aKeyOutsideTheNamespaceOrABadNamespaceIsAProgrammingError() {
    ConfigReader r = ConfigReader.of("sim", Map.of());
    assertThatThrownBy(() -> r.getInt("cuda.device", 0))
        .hasMessage("key 'cuda.device' is not in the namespace sim. of this reader");
    assertThatThrownBy(() -> r.get("sim.")).hasMessageContaining("is not in the namespace sim.");
    assertThatThrownBy(() -> ConfigReader.of("sim.x", Map.of()))
        .hasMessageContaining("namespace 'sim.x' must be a name without dot");
    assertThatThrownBy(() -> ConfigReader.of("", Map.of()))
        .hasMessageContaining("must be a name without dot");
  }

  @Test
  void aParserChecksUnknownKeysAfterReading() {
    ConfigParser<List<Integer>> parser =
        ConfigParser.of("t", r -> List.of(r.getInt("t.a", 1), r.getInt("t.b", 2)));
    assertThat(parser.namespace()).isEqualTo("t");
    assertThat(parser.parse(Map.of("t.b", "5", "u.c", "x"))).containsExactly(1, 5);
    assertThatThrownBy(() -> parser.parse(Map.of("t.c", "5")))
        .hasMessageContaining("unknown key 't.c'")
        .hasMessageContaining("keys are: t.a, t.b");
    assertThat(parser).hasToString("ConfigParser[t]");
  }
}
