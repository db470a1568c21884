package io.kvtier.core.cache;

/**
 * Where an insert into the tree ended, owned by its caller and refilled by every insert: the
 * deepest node reached, the position reached, and for a host-only insert the pages the tree
 * already held (their slots were released as duplicates).
 */
final class InsertResult {
  RadixNode node;
  int end;
  int hostDuplicates;
}
