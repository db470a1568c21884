package io.kvtier.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The strict reading of request bodies: RFC 8259 and nothing more, every error a 400. */
class ApiJsonTest {

  @Test
  void parsesEveryKindOfValueKeepingIntegersApartFromDecimals() {
    JsonNode value =
        ApiJson.parse(
            " {\"a\": [1, -2, 3.5, 1e3, 1.0, true, false, null, \"x\\u00e9\\n\"], \"b\": {}} ");

    JsonNode a = value.get("a");
    assertThat(a.get(0).isIntegralNumber()).isTrue();
    assertThat(a.get(1).intValue()).isEqualTo(-2);
    assertThat(a.get(2).isIntegralNumber()).isFalse();
    assertThat(a.get(3).isIntegralNumber()).as("1e3 is not an integer literal").isFalse();
    assertThat(a.get(4).isIntegralNumber()).as("1.0 is not an integer literal").isFalse();
    assertThat(a.get(7).isNull()).isTrue();
    assertThat(a.get(8).textValue()).isEqualTo("x\u00e9\n");
    assertThat(ApiJson.parse("123456789012345678901234567890").isBigInteger()).isTrue();
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
        "// c\n1",
        "[\"\u0001\"]"
      })
  void rejectsInvalidDocumentsWithAnOffset(String text) {
    assertThatThrownBy(() -> ApiJson.parse(text))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(400))
        .hasMessageStartingWith("the body is not valid JSON at offset ");
  }

  @Test
  void rejectsDeepNestingAndHugeNumbersInsteadOfOverflowing() {
    assertThatThrownBy(() -> ApiJson.parse("[".repeat(10_000)))
        .hasMessageContaining("nesting depth");
    assertThatThrownBy(() -> ApiJson.parse("9".repeat(200)))
        .hasMessageContaining("Number value length");
    assertThatThrownBy(() -> ApiJson.parse("{\"a\":1,\"a\":2}"))
        .hasMessageContaining("Duplicate field 'a'");
  }
}
