package io.kvtier.asserting;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import io.kvtier.spi.TestingProvider;
import io.kvtier.spi.TransferEngine;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * The {@code asserting} device provider: opens a pool of the provider named by {@code
 * asserting.delegate} (default {@code sim}) and wraps it in an {@link AssertingDeviceMemory},
 * its engines optionally in a {@link FaultyTransferEngine} too. See {@link AssertingConfig} for
 * the keys.
 */
@ProviderName(AssertingDeviceMemoryProvider.NAME)
@TestingProvider
public final class AssertingDeviceMemoryProvider implements DeviceMemoryProvider {

  /** The provider's name. */
  public static final String NAME = "asserting";

  /** Creates the provider; does no work. */
  public AssertingDeviceMemoryProvider() {}

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String configNamespace() {
    return AssertingConfig.NAMESPACE;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The delegate is only known at {@link #open}; this reports the availability of the default
   * one: the provider named by the system property {@code asserting.delegate}, else {@code sim}.
   */
  @Override
  public Availability availability() {
    return delegateAvailability(DeviceMemoryProvider.class);
  }

  static Availability delegateAvailability(Class<? extends io.kvtier.spi.KvTierProvider> spi) {
    String name = System.getProperty("asserting.delegate", AssertingConfig.DEFAULT_DELEGATE);
    try {
      Availability a = DelegateProviders.find(spi, name).availability();
      return new Availability(a.available(), "asserting over " + name + ": " + a.reason());
    } catch (RuntimeException | java.util.ServiceConfigurationError e) {
      return Availability.unavailable("asserting over " + name + ": " + e.getMessage());
    }
  }

  @Override
  public DeviceMemory open(PoolSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    AssertingConfig config =
        AssertingConfig.parse(
            context.properties(),
            name -> DelegateProviders.namespaceOf(DeviceMemoryProvider.class, name));
    DeviceMemoryProvider delegate =
        DelegateProviders.find(DeviceMemoryProvider.class, config.delegate());
    DeviceMemory pool = delegate.open(spec, delegateContext(context, config));
    UnaryOperator<TransferEngine> wrapper =
        config
            .faults()
            .<UnaryOperator<TransferEngine>>map(
                plan -> engine -> new FaultyTransferEngine(engine, plan, context.time()))
            .orElse(UnaryOperator.identity());
    return new AssertingDeviceMemory(pool, wrapper);
  }

  static BackendContext delegateContext(BackendContext context, AssertingConfig config) {
    return new BackendContext(
        context.rank(), config.forwarded(), context.time(), context.metrics());
  }
}
