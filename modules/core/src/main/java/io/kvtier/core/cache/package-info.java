/**
 * The per-rank hierarchical radix cache: the paged radix tree over token ids, the device (L1)
 * and host (L2) page pools, eviction and write policies, backups and load-backs.
 */
package io.kvtier.core.cache;
