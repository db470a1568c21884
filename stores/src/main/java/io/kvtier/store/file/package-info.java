/**
 * The {@code file} L3 store: one checksummed file per page under {@code
 * file.directory/<namespace>}, written through a temporary file and an atomic rename, bounded by
 * bytes with least-recently-used eviction ({@link io.kvtier.store.file.FileKvStoreProvider}).
 * Pages outlive the store and the process; stores opened on one directory see each other's
 * pages.
 */
package io.kvtier.store.file;
