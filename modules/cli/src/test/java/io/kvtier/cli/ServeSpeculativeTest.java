package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.KvTierKeys;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code kvtier serve --speculative} (docs/MODELS.md, "Speculative decoding") on stories260K: the
 * draft layer's block joins the layout and its identity the L3 model id, and every unusable value
 * exits 2 with one line. Skipped with the reason where ../shared lacks stories260K.
 */
class ServeSpeculativeTest {
  private static final String STORIES = "models/tinyllamas-stories-260k-f32.gguf";

  @Test
  void aDraftLayerAddsItsBlockToTheLayoutAndItsNameToTheL3ModelId() {
    Path model = io.kvtier.testkit.SharedFiles.require(STORIES);
    try (ServedModel plain = ServedModel.gguf(model, Optional.empty());
        ServedModel drafted =
            ServedModel.gguf(
                model, Optional.empty(), Optional.of("draft-layer:copy-last"), Optional.of(3))) {
      assertThat(plain.fixedKeys()).containsEntry(KvTierKeys.LAYERS, "5");
      assertThat(drafted.fixedKeys()).containsEntry(KvTierKeys.LAYERS, "6");
      assertThat(drafted.l3ModelId()).isEqualTo(plain.l3ModelId() + "-draft-copy-last");
      assertThat(drafted.description())
          .endsWith("; speculative: draft-copy-last (K/V block 5), 3 tokens a step");
    }
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      --speculative eagle | model gguf: speculative=eagle is not a draft: give draft-layer or draft-layer:copy-last
      --speculative model:draft.gguf | model gguf: speculative=model:draft.gguf: a separate draft model is not built yet
      --speculative draft-layer | has no draft layer: speculative=draft-layer reads tensors blk.5.*
      --speculative draft-layer:copy-last --num-speculative-tokens 0 | num-speculative-tokens=0 is outside [1, 64]
      --speculative draft-layer:copy-last --num-speculative-tokens 65 | num-speculative-tokens=65 is outside [1, 64]
      --speculative draft-layer:copy-last --ranks 2 --parallel cp | speculative decoding (draft-copy-last) runs on one rank or under --parallel tp, not over 2 cp ranks
      """)
  void anUnusableSpeculationExits2WithOneLine(String args, String message) {
    Path model = io.kvtier.testkit.SharedFiles.require(STORIES);
    String[] given = args.split(" ");
    String[] all = new String[given.length + 5];
    all[0] = "serve";
    all[1] = "--model";
    all[2] = model.toString();
    all[3] = "--port";
    all[4] = "0";
    System.arraycopy(given, 0, all, 5, given.length);

    CliRun run = CliRun.run(all);

    assertThat(run.status()).as(run.err()).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(run.firstErrLine()).startsWith("kvtier serve: ").contains(message);
    assertThat(run.err().lines().count()).as(run.err()).isEqualTo(1);
  }
}
