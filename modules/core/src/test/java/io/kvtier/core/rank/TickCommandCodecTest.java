package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.TestSeeds;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The bytes rank 0 broadcasts every tick: exact round trips, small, and strict on bad input. */
class TickCommandCodecTest {

  @Test
  void randomCommandsSurviveTheRoundTrip() {
    TestSeeds.run(
        seed -> {
          Random rnd = new Random(seed);
          for (int i = 0; i < TestSeeds.scaled(300); i++) {
            List<RankRequest> arrivals = new ArrayList<>();
            int[] previous = new int[0];
            for (int a = rnd.nextInt(5); a > 0; a--) {
              int length = 1 + rnd.nextInt(300);
              int[] prompt = new int[length];
              int shared = rnd.nextBoolean() ? Math.min(length, previous.length) : 0;
              System.arraycopy(previous, 0, prompt, 0, shared);
              for (int t = shared; t < length; t++) {
                prompt[t] = rnd.nextInt(rnd.nextBoolean() ? 32000 : Integer.MAX_VALUE);
              }
              arrivals.add(
                  new RankRequest(
                      rnd.nextLong(), rnd.nextInt(3) - 1L, rnd.nextInt(), rnd.nextInt(64), prompt));
              previous = prompt;
            }
            long[] aborts = rnd.longs(rnd.nextInt(4)).toArray();
            TickCommands c = new TickCommands(arrivals, aborts, rnd.nextBoolean());
            assertThat(TickCommands.decode(c.encode())).isEqualTo(c);
          }
        });
  }

  @Test
  void transferRolesSurviveTheRoundTripAndCostNothingWithoutThem() {
    int[] prompt = {5, 6, 7, 8, 9};
    RankRequest plain = RankRequest.of(3, prompt, 2);
    List<RankRequest> mixed =
        List.of(plain, RankRequest.of(4, prompt, 1).publishing(), plain.awaitingTransfer(0));
    List<RankRequest> awaiting =
        List.of(RankRequest.of(5, prompt, 2).awaitingTransfer(300), RankRequest.of(6, prompt, 2));
    for (List<RankRequest> arrivals : List.of(mixed, awaiting)) {
      TickCommands c = new TickCommands(arrivals, new long[] {9}, false);
      assertThat(TickCommands.decode(c.encode())).isEqualTo(c);
    }
    // Without transfers: the flags byte and the arrival as they always were (ids 3 then 4).
    byte[] bytes = TickCommands.arrive(List.of(plain)).encode();
    assertThat(bytes).containsExactly(1, 0, 1, 6, 0, 0, 2, 5, 0, 5, 6, 7, 8, 9, 0);
    byte[] withRole = TickCommands.arrive(List.of(plain.awaitingTransfer(300))).encode();
    assertThat(withRole[1]).isEqualTo((byte) 4);
    assertThat(withRole).hasSize(bytes.length + 3);
    // An unknown role is malformed.
    byte[] bad = TickCommands.arrive(List.of(RankRequest.of(3, prompt, 2).publishing())).encode();
    bad[bad.length - 2] = 9;
    assertThatThrownBy(() -> TickCommands.decode(bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("transfer role 9 is unknown");
  }

  @Test
  void samplingSurvivesTheRoundTripAndCostsNothingWithoutIt() {
    int[] prompt = {5, 6, 7, 8, 9};
    RankRequest plain = RankRequest.of(3, prompt, 2);
    RankRequest sampled =
        new RankRequest(
            4, 0, 0, 2, prompt, TransferRole.NONE, 0, new Sampling(0.7f, 0.9f, 40, Long.MIN_VALUE));
    TickCommands c = TickCommands.arrive(List.of(plain, sampled, sampled.publishing()));
    TickCommands back = TickCommands.decode(c.encode());
    assertThat(back).isEqualTo(c);
    assertThat(back.arrivals().get(1).sampling()).isEqualTo(sampled.sampling());
    assertThat(back.arrivals().get(2).sampling()).isEqualTo(sampled.sampling());
    assertThat(back.arrivals().get(0).sampling()).isEqualTo(Sampling.GREEDY);
    // Greedy arrivals: the flags byte and the bytes as they always were.
    assertThat(TickCommands.arrive(List.of(plain)).encode())
        .containsExactly(1, 0, 1, 6, 0, 0, 2, 5, 0, 5, 6, 7, 8, 9, 0);
    byte[] bytes = TickCommands.arrive(List.of(sampled)).encode();
    assertThat(bytes[1]).isEqualTo((byte) 8);
    byte[] bad = bytes.clone();
    // From the end: the abort count (1 byte), the seed (-1 zigzagged: 10), top-k (1), the bits of
    // top-p and temperature (5 each), the arrival's sampling flag (1).
    int topK = bytes.length - 1 - 10 - 1;
    assertThat(bad[topK]).isEqualTo((byte) 40);
    bad[topK] = 2; // still a valid top-k
    assertThat(TickCommands.decode(bad).arrivals().get(0).sampling().topK()).isEqualTo(2);
    byte[] flag = bytes.clone();
    flag[topK - 5 - 5 - 1] = 2;
    assertThatThrownBy(() -> TickCommands.decode(flag))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(
            "sampling flag 2 is neither 0 nor 1 plus the bits 2 (log-probabilities), 4");
  }

  @Test
  void penaltiesSurviveTheRoundTripGreedyOrSampled() {
    int[] prompt = {5, 6, 7};
    RankRequest greedy =
        new RankRequest(
            1,
            0,
            0,
            2,
            prompt,
            TransferRole.NONE,
            0,
            Sampling.GREEDY.withPenalties(new Penalties(0.5f, -1.25f, 1.1f)));
    RankRequest both =
        new RankRequest(
            2,
            0,
            0,
            2,
            prompt,
            TransferRole.NONE,
            0,
            new Sampling(0.7f, 0.9f, 40, 9).withLogprobs(3).withPenalties(new Penalties(0, 2, 1)));
    TickCommands c = TickCommands.arrive(List.of(greedy, both));
    TickCommands back = TickCommands.decode(c.encode());
    assertThat(back).isEqualTo(c);
    assertThat(back.arrivals().get(0).sampling().penalties())
        .isEqualTo(new Penalties(0.5f, -1.25f, 1.1f));
    assertThat(back.arrivals().get(1).sampling()).isEqualTo(both.sampling());
    byte[] bytes = TickCommands.arrive(List.of(greedy)).encode();
    // From the end: the abort count, then the repetition penalty's bits (5 bytes): made 0.0.
    int repetition = bytes.length - 1 - 5;
    byte[] bad = new byte[bytes.length - 4];
    System.arraycopy(bytes, 0, bad, 0, repetition);
    bad[repetition] = 0;
    bad[bad.length - 1] = bytes[bytes.length - 1];
    assertThatThrownBy(() -> TickCommands.decode(bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("repetition=0.0 must be in (0, 10]");
  }

  @Test
  void aLogitBiasSurvivesTheRoundTripAndABadOneIsMalformed() {
    int[] prompt = {5, 6, 7};
    LogitBias bias = LogitBias.of(java.util.Map.of(3, -100f, 70000, 2.5f, 9, 100f));
    RankRequest biased =
        new RankRequest(
            1, 0, 0, 2, prompt, TransferRole.NONE, 0, Sampling.GREEDY.withLogitBias(bias));
    TickCommands c = TickCommands.arrive(List.of(biased));
    TickCommands back = TickCommands.decode(c.encode());
    assertThat(back).isEqualTo(c);
    assertThat(back.arrivals().getFirst().sampling().logitBias()).isEqualTo(bias);
    assertThat(bias.tokens()).containsExactly(3, 9, 70000);
    byte[] bytes = c.encode();
    // From the end: the abort count, then the last bias's bits (5 bytes) and its id's delta.
    byte[] bad = bytes.clone();
    int delta = bytes.length - 1 - 5 - 3;
    bad[delta] = 0; // 70000 - 9 as a 3-byte varint: 0 continues it, so the next bytes shift
    assertThatThrownBy(() -> TickCommands.decode(bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("malformed tick commands");
  }

  @Test
  void heldBackTokensSurviveTheRoundTripAndABadFlagIsMalformed() {
    int[] prompt = {5, 6, 7};
    MinTokens held = MinTokens.of(12, List.of(2, 151645, 70000));
    RankRequest greedy =
        new RankRequest(
            1, 0, 0, 20, prompt, TransferRole.NONE, 0, Sampling.GREEDY.withMinTokens(held));
    RankRequest sampled =
        new RankRequest(
            2,
            0,
            0,
            20,
            prompt,
            TransferRole.NONE,
            0,
            new Sampling(0.8f, 0.9f, 5, -3)
                .withLogitBias(LogitBias.of(java.util.Map.of(4, 1f)))
                .withMinTokens(held));
    TickCommands c = TickCommands.arrive(List.of(greedy, sampled));
    TickCommands back = TickCommands.decode(c.encode());
    assertThat(back).isEqualTo(c);
    assertThat(back.arrivals().get(0).sampling().minTokens()).isEqualTo(held);
    assertThat(back.arrivals().get(1).sampling().minTokens()).isEqualTo(held);
    assertThat(
            TickCommands.arrive(
                    List.of(
                        new RankRequest(
                            3, 0, 0, 20, prompt, TransferRole.NONE, 0, Sampling.GREEDY)))
                .encode())
        .as("a greedy request without held-back tokens encodes as it always did")
        .hasSizeLessThan(c.encode().length);
    // The second arrival's sampling flag (1 + 8 + 16 = 25) turned into 65: no such bit.
    byte[] bytes = c.encode();
    byte[] bad = bytes.clone();
    int flag = -1;
    for (int i = bytes.length - 1; i >= 0; i--) {
      if (bytes[i] == 25) {
        flag = i;
        break;
      }
    }
    assertThat(flag).isPositive();
    bad[flag] = 65;
    assertThatThrownBy(() -> TickCommands.decode(bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sampling flag 65")
        .hasMessageContaining("16 (held-back tokens)");
  }

  @Test
  void promptLogprobsSurviveTheRoundTrip() {
    Sampling asking = Sampling.GREEDY.withLogprobs(2).withPromptLogprobs(true);
    RankRequest r = new RankRequest(1, 0, 0, 2, new int[] {5, 6, 7}, TransferRole.NONE, 0, asking);
    TickCommands c = TickCommands.arrive(List.of(r));
    TickCommands back = TickCommands.decode(c.encode());
    assertThat(back).isEqualTo(c);
    assertThat(back.arrivals().getFirst().sampling().promptLogprobs()).isTrue();
    assertThatThrownBy(() -> Sampling.GREEDY.withPromptLogprobs(true))
        .hasMessageContaining("promptLogprobs needs logprobs of at least 0");
  }

  @Test
  void logprobsSurviveTheRoundTripGreedyOrSampled() {
    int[] prompt = {5, 6, 7};
    RankRequest greedy =
        new RankRequest(1, 0, 0, 2, prompt, TransferRole.NONE, 0, Sampling.GREEDY.withLogprobs(0));
    RankRequest sampled =
        new RankRequest(
            2,
            0,
            0,
            2,
            prompt,
            TransferRole.NONE,
            0,
            new Sampling(0.7f, 0.9f, 40, 9).withLogprobs(Sampling.MAX_LOGPROBS));
    TickCommands c = TickCommands.arrive(List.of(RankRequest.of(3, prompt, 2), greedy, sampled));
    TickCommands back = TickCommands.decode(c.encode());
    assertThat(back).isEqualTo(c);
    assertThat(back.arrivals().get(1).sampling().logprobs()).isZero();
    assertThat(back.arrivals().get(1).sampling().greedy()).isTrue();
    assertThat(back.arrivals().get(2).sampling().logprobs()).isEqualTo(Sampling.MAX_LOGPROBS);
    assertThat(back.arrivals().get(0).sampling()).isEqualTo(Sampling.GREEDY);
    byte[] bytes = TickCommands.arrive(List.of(sampled)).encode();
    // From the end: the abort count, then the logprobs count (20) the flag 2 announced.
    assertThat(bytes[bytes.length - 2]).isEqualTo((byte) Sampling.MAX_LOGPROBS);
    byte[] tooMany = bytes.clone();
    tooMany[bytes.length - 2] = 21;
    assertThatThrownBy(() -> TickCommands.decode(tooMany))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("logprobs=21 must be -1 (none) or 0 to 20");
  }

  @Test
  void anIdleTickIsFourBytesAndASharedPrefixIsSentOnce() {
    assertThat(TickCommands.NONE.encode()).hasSize(4);
    int[] system = new int[2000];
    Arrays.fill(system, 31999);
    int[] a = Arrays.copyOf(system, 2010);
    int[] b = Arrays.copyOf(system, 2010);
    b[2005] = 5;
    byte[] one = TickCommands.arrive(List.of(RankRequest.of(1, a, 4))).encode();
    byte[] two =
        TickCommands.arrive(List.of(RankRequest.of(1, a, 4), RankRequest.of(2, b, 4))).encode();
    // 3 bytes per token of the first prompt; the second adds its header and 5 new tokens
    assertThat(two.length - one.length).isLessThan(30);
  }

  @Test
  void malformedBytesFailNamingTheByte() {
    byte[] good = TickCommands.arrive(List.of(RankRequest.of(1, new int[] {1, 2, 3}, 1))).encode();
    assertThatThrownBy(() -> TickCommands.decode(Arrays.copyOf(good, good.length - 1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("truncated");
    byte[] longer = Arrays.copyOf(good, good.length + 1);
    assertThatThrownBy(() -> TickCommands.decode(longer))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1 trailing bytes");
    byte[] version = good.clone();
    version[0] = 9;
    assertThatThrownBy(() -> TickCommands.decode(version))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("version 9, expected 1");
    byte[] hugeCount = {1, 0, (byte) 0xFF, (byte) 0xFF, 0x7F};
    assertThatThrownBy(() -> TickCommands.decode(hugeCount))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("exceeds the 0 bytes left");
  }

  @Test
  void requestsAreValuesAndValidated() {
    int[] prompt = {4, 5};
    RankRequest r = RankRequest.of(3, prompt, 1);
    prompt[0] = 99;
    assertThat(r.prompt()).containsExactly(4, 5);
    assertThat(r).isEqualTo(RankRequest.of(3, new int[] {4, 5}, 1));
    assertThatThrownBy(() -> RankRequest.of(3, new int[0], 1)).hasMessageContaining("empty prompt");
    assertThatThrownBy(() -> RankRequest.of(3, new int[] {-1}, 1))
        .hasMessageContaining("prompt[0]=-1 is negative");
  }
}
