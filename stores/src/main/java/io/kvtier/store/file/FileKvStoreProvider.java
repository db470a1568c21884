package io.kvtier.store.file;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.ProviderName;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Objects;

/**
 * The {@code file} store: one file per page under {@code file.directory/<namespace>/}, sharded
 * into subdirectories by the first two hex digits of the key. Each file carries a header (magic,
 * format version, the KV layout, the key, the payload length, a CRC32C of the payload and one of
 * the header), is written to a temporary file in its final directory and renamed into place
 * atomically, and is verified whole on every read: a missing, short or damaged file is a counted
 * miss and a damaged one is deleted. The store keeps at most {@code capacityBytes} of page data,
 * evicting the least recently used pages; at open it rebuilds its index from the files found,
 * oldest modification first.
 *
 * <p>Stores opened on the same directory and namespace, in one process or several, find each
 * other's pages (a page file one of them has not seen is adopted when asked for), which is what
 * replicated KV with one elected writer needs. Each store enforces the capacity over the pages it
 * knows, so give them all the same capacity.
 */
@ProviderName("file")
public final class FileKvStoreProvider implements KvStoreProvider {

  /** Creates the provider; does no work. */
  public FileKvStoreProvider() {}

  @Override
  public String name() {
    return "file";
  }

  /**
   * Always available: whether the directory is usable is known only at {@link #open}.
   *
   * @return available
   */
  @Override
  public Availability availability() {
    return Availability.available("checksummed page files under " + FileConfig.DIRECTORY);
  }

  @Override
  public String configNamespace() {
    return FileConfig.NAMESPACE;
  }

  /**
   * Opens the store of {@code spec.namespace()} under {@code file.directory}, creating the
   * directories, scanning the pages already there and evicting beyond the capacity.
   *
   * @throws IllegalArgumentException for a bad {@code file.*} property or a namespace that is
   *     not a directory name
   * @throws java.io.UncheckedIOException if the directory cannot be created or listed, with the
   *     path and the fix
   */
  @Override
  public KvStore open(KvStoreSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    FileConfig config = FileConfig.fromProperties(context.properties());
    return FileKvStore.open(
        storeDirectory(config, spec.namespace()),
        spec,
        config,
        context.metrics(),
        Clock.systemUTC());
  }

  /**
   * The directory of one store namespace.
   *
   * @param config the configuration
   * @param namespace the store namespace, as in {@link KvStoreSpec#namespace()}
   * @return {@code config.directory()/namespace}
   * @throws IllegalArgumentException for the namespaces {@code .} and {@code ..}
   */
  public static Path storeDirectory(FileConfig config, String namespace) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(namespace, "namespace");
    // KvStoreSpec allows '.', so these two would name the parent directories.
    if (namespace.equals(".") || namespace.equals("..")) {
      throw new IllegalArgumentException(
          "namespace='"
              + namespace
              + "' cannot name the file store's directory: use a name"
              + " with a letter or digit, for example the model's name");
    }
    return config.directory().resolve(namespace);
  }

  /**
   * Where the store keeps one page, for operators and tests.
   *
   * @param config the configuration
   * @param namespace the store namespace
   * @param key the page key
   * @return {@code <directory>/<namespace>/<first 2 hex digits>/<64 hex digits>.page}
   */
  public static Path pageFile(FileConfig config, String namespace, PageKey key) {
    return FilePageFormat.pageFile(storeDirectory(config, namespace), key);
  }
}
