package io.kvtier.cli.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The strict parser of request bodies. */
class StrictJsonTest {

  @Test
  void parsesEveryKindOfValue() {
    Object value =
        StrictJson.parse(
            " {\"a\": [1, -2, 3.5, 1e3, true, false, null, \"x\\u00e9\\n\"], \"b\": {}, \"c\": []} ");

    assertThat(value).isInstanceOf(Map.class);
    Map<?, ?> map = (Map<?, ?>) value;
    assertThat(List.copyOf(map.keySet())).isEqualTo(List.of("a", "b", "c"));
    assertThat((List<?>) map.get("a"))
        .isEqualTo(
            List.of(
                1L,
                -2L,
                new BigDecimal("3.5"),
                new BigDecimal("1e3"),
                true,
                false,
                StrictJson.NULL,
                "x\u00e9\n"));
    assertThat(StrictJson.parse("123456789012345678901234567890"))
        .isEqualTo(new BigInteger("123456789012345678901234567890"));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        " ",
        "{",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{a:1}",
        "01",
        "1.",
        "-",
        "1e",
        "tru",
        "nul",
        "\"abc",
        "\"\\x\"",
        "\"\\u12\"",
        "[1] 2",
        "{\"a\":1,\"a\":2}",
        "'a'",
        "NaN",
        "[\"\u0001\"]"
      })
  void rejectsInvalidDocumentsWithAnOffset(String text) {
    assertThatThrownBy(() -> StrictJson.parse(text))
        .isInstanceOf(StrictJson.JsonException.class)
        .hasMessageStartingWith("invalid JSON at offset ");
  }

  @Test
  void rejectsDeepNestingAndHugeNumbersInsteadOfOverflowing() {
    assertThatThrownBy(() -> StrictJson.parse("[".repeat(10_000)))
        .hasMessageContaining("nesting deeper than 32");
    assertThatThrownBy(() -> StrictJson.parse("9".repeat(200)))
        .hasMessageContaining("longer than 100 characters");
  }
}
