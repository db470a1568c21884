/** Micrometer meters of the serving engine, its collective, backends and HTTP requests. */
package io.kvtier.metrics;
