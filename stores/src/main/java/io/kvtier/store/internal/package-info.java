/**
 * What the {@code memory} and {@code file} stores share: their skeleton ({@code AbstractKvStore}:
 * the batch walks and prefix rules of every call), argument checks of a batch, the guard
 * that makes use after {@code close()} an {@link IllegalStateException}, and the counters behind
 * {@link io.kvtier.spi.KvStoreStats}. Not exported.
 */
package io.kvtier.store.internal;
