/**
 * Service provider interfaces of kvtier.
 *
 * <p>Each capability is one small interface with a provider type ({@link
 * io.kvtier.spi.DeviceMemoryProvider}, {@link io.kvtier.spi.HostMemoryProvider}, {@link
 * io.kvtier.spi.CollectiveProvider}, {@link io.kvtier.spi.KvStoreProvider}). Every provider has
 * a stable {@link io.kvtier.spi.KvTierProvider#name() name}, declared on its class with {@link
 * io.kvtier.spi.ProviderName} so that the engine can select it without instantiating the others,
 * an {@link io.kvtier.spi.KvTierProvider#availability() availability} probe that never throws, and
 * a factory method that takes a typed spec and a {@link io.kvtier.spi.BackendContext}.
 */
package io.kvtier.spi;
