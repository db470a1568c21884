package io.kvtier.core.rank;

/**
 * The counts of prompt KV transfers between replicas ({@link TransferRole}) of one {@link
 * RankEngine}; replicated. All 0 on an engine that served no transfer.
 *
 * @param publishes requests whose prompt was published ({@link TransferRole#PUBLISH}) to the end
 * @param pagesPublished prompt pages those publishes left in the L3 store
 * @param publishFailures publishes that left fewer pages than the prompt's full pages (a failed
 *     L3 write, host pages short, or no L3 store)
 * @param awaits requests admitted that awaited a transfer ({@link TransferRole#AWAIT})
 * @param pagesExpected pages their handles named
 * @param pagesFetched pages of theirs fetched from the L3 store
 * @param pagesRecomputed pages of their handles found in no tier and computed
 */
public record TransferStats(
    long publishes,
    long pagesPublished,
    long publishFailures,
    long awaits,
    long pagesExpected,
    long pagesFetched,
    long pagesRecomputed) {}
