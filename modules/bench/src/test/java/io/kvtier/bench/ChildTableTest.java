package io.kvtier.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.SeedExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
class ChildTableTest {

  /**
   * Adds, replaces and removes children whose hashes collide on purpose (a handful of hash
   * values for many pages), checking every lookup against a plain list after every step.
   */
  @Test
  void agreesWithAListUnderHeavyCollisions(Random random) {
    ChildTable table = new ChildTable();
    List<ReferenceRadixCache.Node> model = new ArrayList<>();
    int pageSize = 2;
    int nextToken = 0;
    for (int step = 0; step < 3_000; step++) {
      int op = random.nextInt(3);
      if (op == 0 || model.isEmpty()) {
        int[] page = {nextToken++, random.nextInt(5)};
        ReferenceRadixCache.Node n = node(page, random.nextInt(3));
        table.add(n.firstPageHash, n);
        model.add(n);
      } else if (op == 1) {
        ReferenceRadixCache.Node old = model.get(random.nextInt(model.size()));
        ReferenceRadixCache.Node replacement = node(old.key, old.firstPageHash);
        table.replace(old.firstPageHash, old, replacement);
        model.set(model.indexOf(old), replacement);
      } else {
        ReferenceRadixCache.Node gone = model.remove(random.nextInt(model.size()));
        table.remove(gone.firstPageHash, gone);
        assertThat(table.find(gone.firstPageHash, gone.key, 0, pageSize)).isNull();
      }
      assertThat(table.size()).isEqualTo(model.size());
      for (ReferenceRadixCache.Node n : model) {
        assertThat(table.find(n.firstPageHash, n.key, 0, pageSize)).isSameAs(n);
      }
    }
  }

  private static ReferenceRadixCache.Node node(int[] page, long hash) {
    ReferenceRadixCache.Node n = new ReferenceRadixCache.Node(0, null, page, 0, page.length, 0);
    n.firstPageHash = hash;
    return n;
  }
}
