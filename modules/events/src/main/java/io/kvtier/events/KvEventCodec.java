package io.kvtier.events;

import io.kvtier.core.cache.CacheEvent;
import io.kvtier.core.cache.CacheMedium;
import io.kvtier.spi.PageKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.List;
import java.util.Objects;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Encodes batches in vLLM's KV event schema (msgpack, array-like structs, tagged events):
 *
 * <pre>
 * EventBatch       [ts: float64, events: [event...], data_parallel_rank: int]
 * BlockStored      ["BlockStored", block_hashes: [uint64...], parent_block_hash: uint64|nil,
 *                   token_ids: [int...], block_size: int, lora_id: int|nil, medium: str]
 * BlockRemoved     ["BlockRemoved", block_hashes: [uint64...], medium: str]
 * AllBlocksCleared ["AllBlocksCleared"]
 * </pre>
 *
 * A block hash is the first 64 bits of the page's chained SHA-256 ({@link #blockHash}), as an
 * unsigned integer; {@code lora_id} is the cache's namespace, nil for namespace 0; the medium is
 * {@code GPU}, {@code CPU} or the L3 store's name.
 */
public final class KvEventCodec {
  private final int dataParallelRank;
  private final String l3Medium;

  /**
   * A codec for one replica.
   *
   * @param dataParallelRank the batches' third field
   * @param l3Medium the medium name of L3 blocks, the store's name (for example {@code file})
   */
  public KvEventCodec(int dataParallelRank, String l3Medium) {
    if (dataParallelRank < 0) {
      throw new IllegalArgumentException("dataParallelRank=" + dataParallelRank + " must be >= 0");
    }
    this.dataParallelRank = dataParallelRank;
    this.l3Medium = Objects.requireNonNull(l3Medium, "l3Medium");
  }

  /**
   * A block's hash on the wire: bits 255..192 of its page key, read as an unsigned 64-bit
   * integer (routers key their indexes by 64-bit hashes).
   *
   * @param key the page key
   * @return the hash, to be read as unsigned
   */
  public static long blockHash(PageKey key) {
    return key.h0();
  }

  /**
   * The medium's name on the wire.
   *
   * @param medium the medium
   * @return {@code GPU}, {@code CPU} or the L3 store's name
   */
  public String mediumName(CacheMedium medium) {
    return medium == CacheMedium.L3 ? l3Medium : medium.wireName();
  }

  /**
   * The batch as msgpack.
   *
   * @param batch the batch
   * @return the payload frame
   */
  public byte[] encode(KvEventBatch batch) {
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packArrayHeader(3);
      p.packDouble(batch.timestamp());
      p.packArrayHeader(batch.size());
      if (batch.cleared()) {
        p.packArrayHeader(1);
        p.packString("AllBlocksCleared");
      }
      for (CacheEvent e : batch.events()) {
        switch (e) {
          case CacheEvent.BlocksStored s -> {
            p.packArrayHeader(7);
            p.packString("BlockStored");
            packHashes(p, s.blockHashes());
            if (s.parentHash().isPresent()) {
              packHash(p, blockHash(s.parentHash().get()));
            } else {
              p.packNil();
            }
            int[] tokens = s.tokenIds();
            p.packArrayHeader(tokens.length);
            for (int t : tokens) {
              p.packInt(t);
            }
            p.packInt(s.blockSize());
            if (s.namespace() == 0) {
              p.packNil();
            } else {
              p.packLong(s.namespace());
            }
            p.packString(mediumName(s.medium()));
          }
          case CacheEvent.BlocksRemoved r -> {
            p.packArrayHeader(3);
            p.packString("BlockRemoved");
            packHashes(p, r.blockHashes());
            p.packString(mediumName(r.medium()));
          }
        }
      }
      p.packInt(dataParallelRank);
      return p.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException("msgpack encoding into memory failed", e);
    }
  }

  private static void packHashes(MessageBufferPacker p, List<PageKey> keys) throws IOException {
    p.packArrayHeader(keys.size());
    for (PageKey k : keys) {
      packHash(p, blockHash(k));
    }
  }

  private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

  private static void packHash(MessageBufferPacker p, long hash) throws IOException {
    if (hash >= 0) {
      p.packLong(hash);
    } else {
      // The top bit set: msgpack's uint64, not a negative int64.
      p.packBigInteger(BigInteger.valueOf(hash).add(TWO_64));
    }
  }
}
