package io.kvtier.backend.cuda;

import io.kvtier.spi.config.ConfigParser;
import io.kvtier.spi.config.ConfigReader;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The typed configuration of the CUDA backend, namespace {@code cuda.}; the device and the host
 * provider share it.
 *
 * @param device the ordinal of the GPU that holds the device pool and whose context allocates
 *     the pinned host pool ({@value #DEVICE}), at least 0
 * @param stridedCopies whether the transfer engine may copy the blocks of one page (one per
 *     layer, a fixed stride apart) with one two-dimensional copy instead of one copy per block
 *     ({@value #STRIDED_COPIES}); false restricts it to contiguous copies
 */
public record CudaConfig(int device, boolean stridedCopies) {

  /** The namespace of every key, without the dot. */
  public static final String NAMESPACE = "cuda";

  /** Key of {@link #device()}. */
  public static final String DEVICE = "cuda.device";

  /** Key of {@link #stridedCopies()}. */
  public static final String STRIDED_COPIES = "cuda.strided-copies";

  /** Every key, in documentation order. */
  public static final List<String> KEYS = List.of(DEVICE, STRIDED_COPIES);

  /** Default of {@link #device()}: the first GPU. */
  public static final int DEFAULT_DEVICE = 0;

  /**
   * Default of {@link #stridedCopies()}: on, because a page of a layer-first pool is one block
   * per layer, and one strided copy per page costs one driver call instead of one per layer.
   */
  public static final boolean DEFAULT_STRIDED_COPIES = true;

  /** The configuration with every default. */
  public static final CudaConfig DEFAULTS = new CudaConfig(DEFAULT_DEVICE, DEFAULT_STRIDED_COPIES);

  /** Reads the {@code cuda.*} keys; {@link #fromProperties} and the config test use it. */
  public static final ConfigParser<CudaConfig> PARSER =
      ConfigParser.of(NAMESPACE, CudaConfig::read);

  /** Validates the fields. */
  public CudaConfig {
    if (device < 0) {
      throw new IllegalArgumentException(
          DEVICE + "=" + device + " must be a device ordinal >= 0, for example 0");
    }
  }

  /**
   * Parses the {@code cuda.*} keys of a property map; keys of other namespaces are ignored, keys
   * not set keep their default.
   *
   * @param properties full keys (for example {@code cuda.device}) to raw values
   * @return the config
   * @throws IllegalArgumentException for an unknown {@code cuda.*} key (naming the closest and
   *     listing the known keys) or a bad value (naming the key and the value)
   */
  public static CudaConfig fromProperties(Map<String, String> properties) {
    return PARSER.parse(properties);
  }

  private static CudaConfig read(ConfigReader r) {
    return new CudaConfig(
        r.getInt(DEVICE, DEFAULT_DEVICE, 0, Integer.MAX_VALUE),
        r.getBoolean(STRIDED_COPIES, DEFAULT_STRIDED_COPIES));
  }

  /**
   * Every key with its value, in a form that {@link #fromProperties} reads back to an equal
   * config.
   *
   * @return key to raw value, in {@link #KEYS} order
   */
  public Map<String, String> toProperties() {
    Map<String, String> out = new LinkedHashMap<>();
    out.put(DEVICE, Integer.toString(device));
    out.put(STRIDED_COPIES, Boolean.toString(stridedCopies));
    return out;
  }
}
