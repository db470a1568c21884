package io.kvtier.asserting;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.ProviderName;
import io.kvtier.spi.TestingProvider;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code faulty} L3 store, for soak and chaos tests of a real engine ({@code kvtier.store=
 * faulty}, or {@code kvtier serve --l3 faulty}): opens the store named by {@code
 * faulty.delegate} (default {@value #DEFAULT_DELEGATE}) and wraps it in a {@link FaultyKvStore}
 * and a {@link SlowKvStore}. Keys of namespace {@value #NAMESPACE}:
 *
 * <ul>
 *   <li>{@code faulty.delegate}: the wrapped store's provider;
 *   <li>{@code faulty.probability}: the chance, 0 to 1, that a page is dropped at its put or fails
 *       at a get (default 0);
 *   <li>{@code faulty.throw-probability}: the chance, 0 to 1, that a whole probe, get or put throws
 *       (default: the cube of {@code faulty.probability});
 *   <li>{@code faulty.flip-probability}: the chance, 0 to 1, that a page a get is about to read
 *       has a bit of its stored form flipped first, which the store's own CRC32C must catch
 *       (default 0; the memory, file and hazelcast stores can be damaged);
 *   <li>{@code faulty.seed}: the seed of the fault draws, mixed with the rank (default 0);
 *   <li>{@code faulty.slow-delay}: the wait before every probe, get and put, such as {@code 5ms}
 *       (default 0);
 *   <li>{@code faulty.<delegate namespace>.<key>}: handed to the delegate as {@code <delegate
 *       namespace>.<key>}, for example {@code faulty.file.directory}.
 * </ul>
 *
 * Any other key is an error. A testing provider: {@code kvtier backends} lists it only when asked
 * for testing providers, and {@code auto} never picks it.
 */
@ProviderName(FaultyKvStoreProvider.NAME)
@TestingProvider
public final class FaultyKvStoreProvider implements KvStoreProvider {

  /** The provider's name and configuration namespace. */
  public static final String NAME = "faulty";

  /** The namespace of the keys. */
  public static final String NAMESPACE = NAME;

  /** The store wrapped when {@code faulty.delegate} is absent. */
  public static final String DEFAULT_DELEGATE = "memory";

  /** Creates the provider; does no work. */
  public FaultyKvStoreProvider() {}

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String configNamespace() {
    return NAMESPACE;
  }

  /**
   * Reports the availability of the default delegate, {@value #DEFAULT_DELEGATE}.
   *
   * @return the delegate's availability, or unavailable if no store has its name
   */
  @Override
  public Availability availability() {
    try {
      return delegate(DEFAULT_DELEGATE).availability();
    } catch (IllegalArgumentException e) {
      return Availability.unavailable(e.getMessage());
    }
  }

  /**
   * Opens the delegate's store and wraps it.
   *
   * @throws IllegalArgumentException for an unknown key or a bad value, naming it
   */
  @Override
  public KvStore open(KvStoreSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    Map<String, String> rest = new HashMap<>(context.properties());
    String delegateName =
        Optional.ofNullable(rest.remove(NAMESPACE + ".delegate"))
            .map(String::strip)
            .orElse(DEFAULT_DELEGATE);
    if (delegateName.isEmpty() || delegateName.equals(NAME)) {
      throw new IllegalArgumentException(
          "faulty.delegate='" + delegateName + "' must name another store, such as memory");
    }
    double probability = probability(rest.remove(NAMESPACE + ".probability"), "probability");
    String throwKey = rest.remove(NAMESPACE + ".throw-probability");
    double throwProbability = throwKey == null ? -1 : probability(throwKey, "throw-probability");
    double flipProbability =
        probability(rest.remove(NAMESPACE + ".flip-probability"), "flip-probability");
    long seed = seed(rest.remove(NAMESPACE + ".seed"));
    Duration delay =
        Optional.ofNullable(rest.remove(NAMESPACE + ".slow-delay"))
            .map(v -> AssertingConfig.parseDuration(v, "faulty.slow-delay"))
            .orElse(Duration.ZERO);
    KvStoreProvider delegate = delegate(delegateName);
    String prefix = NAMESPACE + "." + delegate.configNamespace() + ".";
    Map<String, String> forwarded = new HashMap<>();
    rest.forEach(
        (key, value) -> {
          if (!key.startsWith(prefix)) {
            throw new IllegalArgumentException(
                "unknown key "
                    + key
                    + "="
                    + value
                    + ": the faulty store knows"
                    + " faulty.{delegate,probability,throw-probability,flip-probability,seed,slow-delay}"
                    + " and keys "
                    + prefix
                    + "* for the delegate '"
                    + delegateName
                    + "'");
          }
          forwarded.put(key.substring(NAMESPACE.length() + 1), value);
        });
    KvStore store =
        delegate.open(
            spec, new BackendContext(context.rank(), forwarded, context.time(), context.metrics()));
    KvStore faulty =
        probability > 0 || throwProbability > 0 || flipProbability > 0
            ? new FaultyKvStore(
                store,
                seed * 31 + context.rank(),
                probability,
                throwProbability,
                flipProbability,
                context.metrics())
            : store;
    return delay.isZero() ? faulty : new SlowKvStore(faulty, delay);
  }

  /** The store named {@code name}, or an error that names the key and what was found. */
  private static KvStoreProvider delegate(String name) {
    try {
      return Providers.named(KvStoreProvider.class, name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("faulty.delegate=" + name + ": " + e.getMessage(), e);
    }
  }

  private static double probability(String value, String key) {
    if (value == null) {
      return 0;
    }
    double p;
    try {
      p = Double.parseDouble(value.strip());
    } catch (NumberFormatException e) {
      p = Double.NaN;
    }
    if (!(p >= 0 && p <= 1)) {
      throw new IllegalArgumentException(
          "faulty." + key + "='" + value + "' must be a number between 0 and 1");
    }
    return p;
  }

  private static long seed(String value) {
    if (value == null) {
      return 0;
    }
    try {
      return Long.parseLong(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("faulty.seed='" + value + "' must be an integer", e);
    }
  }
}
