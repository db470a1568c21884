package io.kvtier.core.cache;

/**
 * The candidate pages of one L3 prefetch as the replicated side names them: {@code pages} pages
 * of {@code tokens} from {@code from}, whose chain starts at {@code prior} (the anchor's last
 * page hash, or the namespace's seed; null for the first page of namespace 0). Their hashes and
 * keys are computed rank-locally, each once and only as far as the probe and fetch need them
 * (CACHE.md §12): a probe that misses at the first page hashes one page, not the request.
 *
 * @param prior the hash the first candidate page chains to, or null
 * @param tokens the request's tokens (not copied: the prefetch holds them already)
 * @param from the first candidate page's first token
 * @param pages how many candidate pages
 * @param pageSize tokens per page
 */
record CandidatePages(byte[] prior, int[] tokens, int from, int pages, int pageSize) {}
