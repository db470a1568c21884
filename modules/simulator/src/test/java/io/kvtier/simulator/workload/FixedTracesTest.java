package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

public class FixedTracesTest {

  // Generated once: the assertions below only read them.
  private static final Trace SHARED_PREFIX = FixedTraces.sharedPrefix();
  private static final Trace MULTITURN = FixedTraces.multiturn();

  @Test
  public void sharedPrefixMatchesTheReferenceTable() {
    assertThat(SHARED_PREFIX.size()).isEqualTo(1024).isEqualTo(FixedTraces.SHARED_PREFIX_REQUESTS);
    assertThat(SHARED_PREFIX.totalTokens()).isEqualTo(2_228_224L);
    assertThat(Arrays.copyOf(SHARED_PREFIX.prompt(0), 8))
        .containsExactly(31158, 4094, 28433, 7930, 14301, 10552, 22821, 15385);
    assertThat(sha256(TraceJsonl.toBytes(SHARED_PREFIX)))
        .isEqualTo("0963b177fb10ff9458d0d2710e49f37c8427c0e05eec4565ace4f92dc72d0382");
  }

  @Test
  public void multiturnMatchesTheReferenceTable() {
    assertThat(MULTITURN.size()).isEqualTo(640).isEqualTo(FixedTraces.MULTITURN_REQUESTS);
    assertThat(MULTITURN.totalTokens()).isEqualTo(573_440L);
    assertThat(Arrays.copyOf(MULTITURN.prompt(0), 8))
        .containsExactly(18010, 6162, 16327, 25981, 14173, 31000, 30763, 23291);
    assertThat(sha256(TraceJsonl.toBytes(MULTITURN)))
        .isEqualTo("e310133a0871d282f8685e7981e5a3cd3a28aa86dff8c2ef1a3e7b6cae950064");
  }

  @Test
  public void sharedPrefixIs64SystemPromptsEachFollowedBy16DistinctQuestions() {
    Map<List<Integer>, Integer> groupSizes = new HashMap<>();
    for (int r = 0; r < SHARED_PREFIX.size(); r++) {
      int[] p = SHARED_PREFIX.prompt(r);
      assertThat(p).hasSize(2176);
      groupSizes.merge(boxed(Arrays.copyOf(p, 2048)), 1, Integer::sum);
    }

    assertThat(groupSizes).hasSize(64);
    assertThat(groupSizes.values()).containsOnly(16);
  }

  @Test
  public void multiturnRoundsArePermutationsAndEachTurnExtendsTheConversationsPreviousTurn() {
    Map<List<Integer>, int[]> lastTurn = new HashMap<>();
    for (int round = 0; round < 5; round++) {
      for (int i = 0; i < 128; i++) {
        int[] p = MULTITURN.prompt(round * 128 + i);
        assertThat(p).hasSize(512 + round * 192);
        List<Integer> conversation = boxed(Arrays.copyOf(p, 512));
        int[] previous = lastTurn.put(conversation, p);
        if (round == 0) {
          assertThat(previous).as("conversation seen twice in round 0").isNull();
        } else {
          assertThat(previous).as("turn %d without a previous turn", round).isNotNull();
          assertThat(previous).hasSize(512 + (round - 1) * 192);
          assertThat(Arrays.copyOf(p, previous.length)).isEqualTo(previous);
        }
      }
      assertThat(lastTurn).hasSize(128);
    }
  }

  @Test
  public void everyPromptIsPageAlignedForPages1To64() {
    for (Trace t : List.of(SHARED_PREFIX, MULTITURN)) {
      for (int r = 0; r < t.size(); r++) {
        assertThat(t.promptLength(r) % 64).isZero();
      }
    }
  }

  @Test
  public void generationIsDeterministicAndTheJsonlRoundTrips() {
    assertThat(FixedTraces.multiturn()).isEqualTo(MULTITURN);
    assertThat(TraceJsonl.read(TraceJsonl.toBytes(SHARED_PREFIX), "memory"))
        .isEqualTo(SHARED_PREFIX);
  }

  @Test
  public void byNameKnowsBothTracesAndListsThemOtherwise() {
    assertThat(FixedTraces.byName("multiturn")).isEqualTo(MULTITURN);
    assertThatThrownBy(() -> FixedTraces.byName("doc-qa"))
        .hasMessage("unknown fixed trace 'doc-qa': the fixed traces are shared-prefix, multiturn");
  }

  private static List<Integer> boxed(int[] a) {
    return Arrays.stream(a).boxed().toList();
  }

  static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }
}
