package io.kvtier.store.file;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.TimeSource;
import io.kvtier.testkit.conformance.KvStoreCapability;
import io.kvtier.testkit.conformance.KvStoreConformanceSuite;
import io.kvtier.testkit.conformance.KvStoreDamage;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.EnumSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.io.TempDir;

/** The store suite on the {@code file} store, in a fresh directory per check. */
class FileKvStoreConformanceTest extends KvStoreConformanceSuite {

  @TempDir Path directory;

  @Override
  protected KvStoreProvider provider() {
    return Providers.named(KvStoreProvider.class, "file");
  }

  @Override
  protected BackendContext context() {
    return new BackendContext(
        0,
        Map.of(FileConfig.DIRECTORY, directory.toString()),
        TimeSource.SYSTEM,
        BackendMetrics.NOOP);
  }

  @Override
  protected Set<KvStoreCapability> capabilities() {
    return EnumSet.allOf(KvStoreCapability.class);
  }

  @Override
  protected void damage(
      KvStoreSpec spec, BackendContext context, PageKey key, KvStoreDamage damage, Random random)
      throws Exception {
    Path file =
        FileKvStoreProvider.pageFile(
            FileConfig.fromProperties(context.properties()), spec.namespace(), key);
    long size = Files.size(file);
    switch (damage) {
      case TRUNCATED -> {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
          channel.truncate(1 + random.nextLong(size - 1));
        }
      }
      case FLIPPED_BIT -> {
        byte[] bytes = Files.readAllBytes(file);
        int bit = random.nextInt(bytes.length * 8);
        bytes[bit / 8] ^= (byte) (1 << (bit % 8));
        Files.write(file, bytes);
      }
      case EMPTIED -> Files.write(file, new byte[0]);
      case REMOVED -> Files.delete(file);
    }
  }
}
