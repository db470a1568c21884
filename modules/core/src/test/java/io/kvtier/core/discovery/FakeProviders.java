package io.kvtier.core.discovery;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import io.kvtier.spi.TestingProvider;
import java.util.concurrent.atomic.AtomicInteger;

/** Hand-written device providers for discovery tests; none of them opens a pool. */
final class FakeProviders {
  private FakeProviders() {}

  /** A device provider with a fixed name and availability; never opens anything. */
  abstract static class Fake implements DeviceMemoryProvider {
    private final String name;
    private final Availability availability;

    Fake(String name, Availability availability) {
      this.name = name;
      this.availability = availability;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public Availability availability() {
      return availability;
    }

    @Override
    public DeviceMemory open(PoolSpec spec, BackendContext context) {
      throw new UnsupportedOperationException("a discovery fake opens no pool");
    }
  }

  @ProviderName("sim")
  static final class Sim extends Fake {
    Sim() {
      super("sim", Availability.available("fake simulation"));
    }
  }

  /** A second class that claims the name "sim". */
  @ProviderName("sim")
  static final class OtherSim extends Fake {
    OtherSim() {
      super("sim", Availability.available("another fake simulation"));
    }
  }

  /** A testing provider, such as the asserting wrappers: selectable, never offered. */
  @ProviderName("checked")
  @TestingProvider
  static final class Checked extends Fake {
    Checked() {
      super("checked", Availability.available("fake checking wrapper"));
    }
  }

  @ProviderName("cuda")
  static final class NoGpu extends Fake {
    NoGpu() {
      super("cuda", Availability.unavailable("no GPU in this fake: install one"));
    }
  }

  @ProviderName("cuda")
  static final class Gpu extends Fake {
    Gpu() {
      super("cuda", Availability.available("fake GPU"));
    }
  }

  /** Must never be instantiated unless selected: its constructor fails. */
  @ProviderName("exploding")
  static final class Exploding extends Fake {
    Exploding() {
      super("exploding", Availability.available("never reached"));
      throw new IllegalStateException("native library missing (fake)");
    }
  }

  @ProviderName("liar")
  static final class Liar extends Fake {
    Liar() {
      super("truth", Availability.available("says another name"));
    }
  }

  @ProviderName("prober")
  static final class ThrowingProbe extends Fake {
    ThrowingProbe() {
      super("prober", Availability.available("unused"));
    }

    @Override
    public Availability availability() {
      throw new IllegalStateException("probe crashed (fake)");
    }
  }

  @ProviderName("shared")
  static final class OwnNamespace extends Fake {
    OwnNamespace() {
      super("shared", Availability.available("reads the family namespace"));
    }

    @Override
    public String configNamespace() {
      return "family";
    }
  }

  /** No annotation. */
  static final class Anonymous extends Fake {
    Anonymous() {
      super("anonymous", Availability.available("unused"));
    }
  }

  @ProviderName("auto")
  static final class Reserved extends Fake {
    Reserved() {
      super("auto", Availability.available("unused"));
    }
  }

  @ProviderName("Bad_Name")
  static final class Malformed extends Fake {
    Malformed() {
      super("Bad_Name", Availability.available("unused"));
    }
  }

  /** A candidate list entry that counts how often its factory runs. */
  static final class Counted {
    final AtomicInteger created = new AtomicInteger();
    final ProviderCandidate<DeviceMemoryProvider> candidate;

    Counted(Class<? extends Fake> type, java.util.function.Supplier<? extends Fake> factory) {
      this.candidate =
          ProviderCandidate.of(
              type,
              () -> {
                created.incrementAndGet();
                return factory.get();
              });
    }
  }
}
