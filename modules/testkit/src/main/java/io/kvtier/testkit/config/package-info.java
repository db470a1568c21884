/**
 * Assertions on typed configurations read through {@link io.kvtier.spi.config.ConfigReader}:
 * {@link io.kvtier.testkit.config.ConfigAssertions} pins a config's defaults and its full key
 * mapping, so that each config test is two methods plus the error messages that matter.
 */
package io.kvtier.testkit.config;
