package io.kvtier.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.opentest4j.TestAbortedException;

/** Parsing the seed properties, deriving seeds, and the reproduce line. */
@ExtendWith(SeedExtension.class)
class TestSeedsTest {

  @Test
  void seedsParseAsDecimalOrHexAndBlankMeansRandom() {
    assertThat(TestSeeds.parseSeed("42", 7)).isEqualTo(42);
    assertThat(TestSeeds.parseSeed(" -9 ", 7)).isEqualTo(-9);
    assertThat(TestSeeds.parseSeed("0x2A", 7)).isEqualTo(42);
    assertThat(TestSeeds.parseSeed("0xFFFFFFFFFFFFFFFF", 7)).isEqualTo(-1);
    assertThat(TestSeeds.parseSeed(null, 7)).isEqualTo(7);
    assertThat(TestSeeds.parseSeed("  ", 7)).isEqualTo(7);
    assertThatThrownBy(() -> TestSeeds.parseSeed("forty-two", 7))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.tests.seed='forty-two' is not a seed")
        .hasMessageContaining("-Dkvtier.tests.seed=42");
  }

  @Test
  void multipliersArePositiveIntegersDefaultingToOne() {
    assertThat(TestSeeds.parseMultiplier(null)).isEqualTo(1);
    assertThat(TestSeeds.parseMultiplier("")).isEqualTo(1);
    assertThat(TestSeeds.parseMultiplier(" 10 ")).isEqualTo(10);
    assertThatThrownBy(() -> TestSeeds.parseMultiplier("0"))
        .hasMessageContaining("kvtier.tests.multiplier=0 must be >= 1");
    assertThatThrownBy(() -> TestSeeds.parseMultiplier("lots"))
        .hasMessageContaining("kvtier.tests.multiplier='lots' is not an integer");
  }

  @Test
  void theRunsValuesComeFromTheSystemProperties() {
    String seed = System.getProperty(TestSeeds.SEED_PROPERTY);
    if (seed != null && !seed.isBlank()) {
      assertThat(TestSeeds.masterSeed()).isEqualTo(TestSeeds.parseSeed(seed, 0));
    }
    assertThat(TestSeeds.masterSeed()).as("read once per JVM").isEqualTo(TestSeeds.masterSeed());
    assertThat(TestSeeds.multiplier())
        .isEqualTo(TestSeeds.parseMultiplier(System.getProperty(TestSeeds.MULTIPLIER_PROPERTY)));
    assertThat(TestSeeds.scaled(3)).isEqualTo(3 * TestSeeds.multiplier());
    assertThatThrownBy(() -> TestSeeds.scaled(0)).hasMessageContaining("base=0");
  }

  @Test
  void derivedSeedsDependOnlyOnTheMasterSeedAndTheName(Random random) {
    long master = random.nextLong();
    assertThat(TestSeeds.mix(master, "a#b")).isEqualTo(TestSeeds.mix(master, "a#b"));
    assertThat(TestSeeds.mix(master, "a#b")).isNotEqualTo(TestSeeds.mix(master, "a#c"));
    assertThat(TestSeeds.mix(master, "a#b")).isNotEqualTo(TestSeeds.mix(master + 1, "a#b"));
    assertThat(TestSeeds.mix(master, "")).isNotEqualTo(TestSeeds.mix(master, "\0"));
    assertThat(TestSeeds.seedFor("x")).isEqualTo(TestSeeds.mix(TestSeeds.masterSeed(), "x"));
    assertThat(TestSeeds.random("x").nextLong())
        .isEqualTo(new Random(TestSeeds.seedFor("x")).nextLong());
  }

  @Test
  void aFailureCarriesTheLineThatReproducesIt() throws Exception {
    String filter =
        SeedExtension.testFilter(
            TestSeedsTest.class,
            Optional.of(
                TestSeedsTest.class.getDeclaredMethod("aFailureCarriesTheLineThatReproducesIt")));
    assertThat(filter).isEqualTo("TestSeedsTest#aFailureCarriesTheLineThatReproducesIt");
    assertThat(SeedExtension.testFilter(TestSeedsTest.class, Optional.empty()))
        .isEqualTo("TestSeedsTest");
    AssertionError failure = new AssertionError("boom");
    assertThat(SeedExtension.withReproduceLine(failure, filter)).isSameAs(failure);
    assertThat(failure.getSuppressed())
        .singleElement()
        .satisfies(
            s ->
                assertThat(s.getMessage())
                    .isEqualTo(
                        "reproduce with -Dkvtier.tests.seed="
                            + TestSeeds.masterSeed()
                            + " -Dtest=TestSeedsTest#aFailureCarriesTheLineThatReproducesIt"))
        .satisfies(s -> assertThat(s.getStackTrace()).isEmpty());
    TestAbortedException skipped = new TestAbortedException("assumption");
    assertThat(SeedExtension.withReproduceLine(skipped, filter).getSuppressed()).isEmpty();
  }

  @Test
  void runPassesTheMasterSeedAndAFailureNamesTheCallerInItsReproduceLine() {
    long[] seen = new long[1];
    TestSeeds.run(seed -> seen[0] = seed);
    assertThat(seen[0]).isEqualTo(TestSeeds.masterSeed());

    assertThatThrownBy(
            () ->
                TestSeeds.run(
                    seed -> {
                      throw new IllegalStateException("drawn " + seed);
                    }))
        .isInstanceOf(AssertionError.class)
        .hasMessage(
            "randomized test failed; reproduce with -Dkvtier.tests.seed="
                + TestSeeds.masterSeed()
                + " -Dtest=TestSeedsTest#"
                + "runPassesTheMasterSeedAndAFailureNamesTheCallerInItsReproduceLine")
        .cause()
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("drawn " + TestSeeds.masterSeed());
  }
}
