package io.kvtier.collective.mpi.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.ReduceOp;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MpiCallTest {

  @Test
  void fingerprintIgnoresTheSequenceButNotTheCall() {
    MpiCall call = new MpiCall(MpiCall.Kind.ALL_REDUCE_MIN, 3, "sync", 1);
    assertThat(new MpiCall(MpiCall.Kind.ALL_REDUCE_MIN, 3, "sync", 99).fingerprint())
        .isEqualTo(call.fingerprint());
    Set<Long> prints = new HashSet<>();
    for (MpiCall.Kind kind : MpiCall.Kind.values()) {
      for (int argument = 0; argument < 20; argument++) {
        for (String tag : new String[] {"", "a", "b", "ab", "ba", "sync", "Aa", "BB"}) {
          prints.add(new MpiCall(kind, argument, tag, 0).fingerprint());
        }
      }
    }
    assertThat(prints).hasSize(MpiCall.Kind.values().length * 20 * 8);
  }

  @Test
  void describesTheCallForMessages() {
    assertThat(new MpiCall(MpiCall.Kind.allReduce(ReduceOp.SUM), 5, "digest", 12).describe())
        .isEqualTo("allReduce(SUM, length=5) tag 'digest' seq 12");
    assertThat(new MpiCall(MpiCall.Kind.BROADCAST, 1, "recv", 0).describe())
        .isEqualTo("broadcast(root=1) tag 'recv' seq 0");
    assertThat(new MpiCall(MpiCall.Kind.BARRIER, 0, "x", 3)).hasToString("barrier tag 'x' seq 3");
  }
}
