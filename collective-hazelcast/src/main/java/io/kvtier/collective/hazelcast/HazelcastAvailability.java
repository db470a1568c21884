package io.kvtier.collective.hazelcast;

import io.kvtier.spi.Availability;

/** The availability probe of the Hazelcast providers. */
final class HazelcastAvailability {

  /** The Hazelcast release kvtier is built and tested against. */
  static final String SUPPORTED_VERSION = "5.4.0";

  private HazelcastAvailability() {}

  /**
   * Checks that Hazelcast's classes load and that their version is the supported one (5.5 and
   * later refuse to start the CP subsystem without an Enterprise licence). Never throws.
   *
   * @param what what the provider does, for the reason
   * @return the availability
   */
  static Availability probe(String what) {
    try {
      String version = com.hazelcast.instance.BuildInfoProvider.getBuildInfo().getVersion();
      if (!SUPPORTED_VERSION.equals(version)) {
        return Availability.unavailable(
            "Hazelcast "
                + version
                + " is on the module path but kvtier needs "
                + SUPPORTED_VERSION
                + ": 5.5 and later make the CP"
                + " subsystem Enterprise-only; put com.hazelcast:hazelcast:"
                + SUPPORTED_VERSION
                + " on the module path");
      }
      return Availability.available("Hazelcast " + version + ": " + what);
    } catch (LinkageError | RuntimeException e) {
      return Availability.unavailable(
          "Hazelcast does not load ("
              + e
              + "): put com.hazelcast:hazelcast:"
              + SUPPORTED_VERSION
              + " on the module path");
    }
  }
}
