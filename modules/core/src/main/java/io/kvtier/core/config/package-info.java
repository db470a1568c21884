/** Typed configuration of the engine, with defaults, units and strict key checking. */
package io.kvtier.core.config;
