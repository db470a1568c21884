package io.kvtier.core.rank;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The bytes of {@link TickCommands} that rank 0 broadcasts every tick, kept small because the
 * broadcast runs every tick on every rank.
 *
 * <p>Format: a version byte, a flags byte (bit 0: end of input, bit 1: ticks skipped, bit 2:
 * the arrivals carry transfer roles), then
 * unsigned LEB128 varints: the skipped ticks if bit 1 is set (so a tick that skips none encodes
 * as it always did), then the arrivals.
 * Arrivals: count, then per request the zigzag delta of its id from the previous one (ids are
 * usually consecutive: one byte), zigzag namespace, zigzag priority, max output tokens, prompt
 * length, the length of the prompt prefix it shares with the previous arrival of the message
 * (shared-prefix and multi-turn floods repeat long prefixes), and the remaining tokens; with bit 2
 * then its {@link TransferRole} ordinal and, for {@code AWAIT}, the handle's pages (so a message
 * without transfers encodes as it always did); with bit 3 (some arrival samples) then a byte, 1 if
 * it is not plain greedy decoding, plus 2 if it reports log-probabilities, 4 if it has penalties,
 * 8 if it has a logit bias, 16 if it holds tokens back ({@link MinTokens}) and 32 if it reports its
 * prompt's log-probabilities (no more bytes), and if not 0 its
 * {@link Sampling}: the bits of temperature and top-p, top-k, the zigzag seed, with 2 the count of
 * most likely tokens, with 4 the bits of the presence, frequency and repetition penalties, with 8
 * the count of biased tokens and for each the id's delta from the previous one and the bias's
 * bits, with 16 the count of tokens generated first, the count of held-back tokens and each id's
 * delta from the previous one (a message of greedy requests encodes as it always did). Aborts:
 * count, then zigzag deltas of the ids. An idle tick encodes in 4 bytes.
 */
final class TickCommandCodec {
  private static final byte VERSION = 1;
  private static final TransferRole[] TRANSFER_ROLES = TransferRole.values();

  private TickCommandCodec() {}

  static byte[] encode(TickCommands commands) {
    Out out = new Out();
    out.bytes[out.size++] = VERSION;
    boolean skips = commands.skippedTicks() != 0;
    List<RankRequest> arrivals = commands.arrivals();
    boolean transfers = false;
    boolean sampled = false;
    for (RankRequest r : arrivals) {
      transfers |= r.transfer() != TransferRole.NONE;
      sampled |= !r.sampling().equals(Sampling.GREEDY);
    }
    out.bytes[out.size++] =
        (byte)
            ((commands.endOfInput() ? 1 : 0)
                | (skips ? 2 : 0)
                | (transfers ? 4 : 0)
                | (sampled ? 8 : 0));
    if (skips) {
      out.varint(commands.skippedTicks());
    }
    out.varint(arrivals.size());
    long previousId = 0;
    int[] previous = new int[0];
    for (RankRequest r : arrivals) {
      int[] prompt = r.promptArray();
      out.varint(zigzag(r.id() - previousId));
      out.varint(zigzag(r.namespace()));
      out.varint(zigzag(r.priority()));
      out.varint(r.maxOutputTokens());
      out.varint(prompt.length);
      int shared = Arrays.mismatch(prompt, previous);
      shared = shared < 0 ? prompt.length : Math.min(shared, prompt.length);
      out.varint(shared);
      for (int i = shared; i < prompt.length; i++) {
        out.varint(prompt[i]);
      }
      if (transfers) {
        out.varint(r.transfer().ordinal());
        if (r.transfer() == TransferRole.AWAIT) {
          out.varint(r.transferPages());
        }
      }
      if (sampled) {
        Sampling sampling = r.sampling();
        boolean greedy = sampling.equals(Sampling.GREEDY);
        boolean logprobs = sampling.logprobs() >= 0;
        Penalties penalties = sampling.penalties();
        LogitBias bias = sampling.logitBias();
        MinTokens held = sampling.minTokens();
        out.varint(
            greedy
                ? 0
                : 1
                    | (logprobs ? 2 : 0)
                    | (penalties.none() ? 0 : 4)
                    | (bias.none() ? 0 : 8)
                    | (held.none() ? 0 : 16)
                    | (sampling.promptLogprobs() ? 32 : 0));
        if (!greedy) {
          out.varint(Integer.toUnsignedLong(Float.floatToIntBits(sampling.temperature())));
          out.varint(Integer.toUnsignedLong(Float.floatToIntBits(sampling.topP())));
          out.varint(sampling.topK());
          out.varint(zigzag(sampling.seed()));
          if (logprobs) {
            out.varint(sampling.logprobs());
          }
          if (!penalties.none()) {
            out.varint(Integer.toUnsignedLong(Float.floatToIntBits(penalties.presence())));
            out.varint(Integer.toUnsignedLong(Float.floatToIntBits(penalties.frequency())));
            out.varint(Integer.toUnsignedLong(Float.floatToIntBits(penalties.repetition())));
          }
          if (!bias.none()) {
            int[] ids = bias.tokens();
            float[] biases = bias.biases();
            out.varint(ids.length);
            int previousToken = 0;
            for (int i = 0; i < ids.length; i++) {
              out.varint(ids[i] - previousToken);
              out.varint(Integer.toUnsignedLong(Float.floatToIntBits(biases[i])));
              previousToken = ids[i];
            }
          }
          if (!held.none()) {
            int[] ids = held.tokens();
            out.varint(held.count());
            out.varint(ids.length);
            int previousToken = 0;
            for (int id : ids) {
              out.varint(id - previousToken);
              previousToken = id;
            }
          }
        }
      }
      previousId = r.id();
      previous = prompt;
    }
    long[] aborts = commands.aborts();
    out.varint(aborts.length);
    long previousAbort = 0;
    for (long id : aborts) {
      out.varint(zigzag(id - previousAbort));
      previousAbort = id;
    }
    return Arrays.copyOf(out.bytes, out.size);
  }

  static TickCommands decode(byte[] bytes) {
    In in = new In(bytes);
    int version = in.readByte();
    if (version != VERSION) {
      throw in.malformed(
          "version "
              + version
              + ", expected "
              + VERSION
              + ": every rank must run the same kvtier version");
    }
    int flags = in.readByte();
    if ((flags & ~15) != 0) {
      throw in.malformed("unknown flags " + flags);
    }
    long skipped = 0;
    if ((flags & 2) != 0) {
      skipped = in.varint();
      if (skipped <= 0) {
        throw in.malformed("skipped ticks " + skipped + " with the skip flag set");
      }
    }
    int count = in.count("arrivals");
    List<RankRequest> arrivals = new ArrayList<>(count);
    long previousId = 0;
    int[] previous = new int[0];
    for (int a = 0; a < count; a++) {
      long id = previousId + unzigzag(in.varint());
      long namespace = unzigzag(in.varint());
      long priority = unzigzag(in.varint());
      int maxOutput = in.intValue("maxOutputTokens");
      int length = in.intValue("prompt length");
      if (length > previous.length + (bytes.length - in.position)) {
        throw in.malformed("prompt length " + length + " exceeds what the bytes left can hold");
      }
      int shared = in.intValue("shared prefix");
      if (shared > length || shared > previous.length) {
        throw in.malformed(
            "shared prefix "
                + shared
                + " exceeds prompt length "
                + length
                + " or the previous prompt's "
                + previous.length);
      }
      int[] prompt = Arrays.copyOf(previous, length);
      for (int i = shared; i < length; i++) {
        prompt[i] = in.intValue("token");
      }
      if (priority != (int) priority) {
        throw in.malformed("priority " + priority + " is not an int");
      }
      TransferRole transfer = TransferRole.NONE;
      int transferPages = 0;
      if ((flags & 4) != 0) {
        int role = in.intValue("transfer role");
        if (role >= TRANSFER_ROLES.length) {
          throw in.malformed("transfer role " + role + " is unknown");
        }
        transfer = TRANSFER_ROLES[role];
        if (transfer == TransferRole.AWAIT) {
          transferPages = in.intValue("transfer pages");
        }
      }
      Sampling sampling = Sampling.GREEDY;
      if ((flags & 8) != 0) {
        int samples = in.intValue("sampling flag");
        if (samples != 0 && (samples > 63 || (samples & 1) == 0)) {
          throw in.malformed(
              "sampling flag "
                  + samples
                  + " is neither 0 nor 1 plus the bits 2 (log-probabilities), 4 (penalties), 8"
                  + " (a logit bias), 16 (held-back tokens) and 32 (prompt log-probabilities)");
        }
        if (samples != 0) {
          float temperature = Float.intBitsToFloat((int) in.varint());
          float topP = Float.intBitsToFloat((int) in.varint());
          int topK = in.intValue("top-k");
          long seed = unzigzag(in.varint());
          int logprobs = (samples & 2) != 0 ? in.intValue("logprobs") : -1;
          float presence = 0;
          float frequency = 0;
          float repetition = 1;
          if ((samples & 4) != 0) {
            presence = Float.intBitsToFloat((int) in.varint());
            frequency = Float.intBitsToFloat((int) in.varint());
            repetition = Float.intBitsToFloat((int) in.varint());
          }
          LogitBias bias = LogitBias.NONE;
          if ((samples & 8) != 0) {
            int biased = in.count("biased tokens");
            int[] ids = new int[biased];
            float[] biases = new float[biased];
            int previousToken = 0;
            for (int i = 0; i < biased; i++) {
              ids[i] = previousToken + in.intValue("biased token delta");
              biases[i] = Float.intBitsToFloat((int) in.varint());
              previousToken = ids[i];
            }
            try {
              bias = new LogitBias(ids, biases);
            } catch (IllegalArgumentException e) {
              throw in.malformed("logit bias: " + e.getMessage());
            }
          }
          MinTokens held = MinTokens.NONE;
          if ((samples & 16) != 0) {
            int first = in.intValue("min tokens");
            int[] ids = new int[in.count("held-back tokens")];
            int previousToken = 0;
            for (int i = 0; i < ids.length; i++) {
              ids[i] = previousToken + in.intValue("held-back token delta");
              previousToken = ids[i];
            }
            try {
              held = new MinTokens(first, ids);
            } catch (IllegalArgumentException e) {
              throw in.malformed("min tokens: " + e.getMessage());
            }
          }
          try {
            sampling =
                new Sampling(
                    temperature,
                    topP,
                    topK,
                    seed,
                    logprobs,
                    new Penalties(presence, frequency, repetition),
                    bias,
                    held,
                    (samples & 32) != 0);
          } catch (IllegalArgumentException e) {
            throw in.malformed("sampling: " + e.getMessage());
          }
        }
      }
      arrivals.add(
          new RankRequest(
              id, namespace, (int) priority, maxOutput, prompt, transfer, transferPages, sampling));
      previousId = id;
      previous = prompt;
    }
    int abortCount = in.count("aborts");
    long[] aborts = new long[abortCount];
    long previousAbort = 0;
    for (int i = 0; i < abortCount; i++) {
      aborts[i] = previousAbort + unzigzag(in.varint());
      previousAbort = aborts[i];
    }
    if (in.position != bytes.length) {
      throw in.malformed((bytes.length - in.position) + " trailing bytes");
    }
    return new TickCommands(arrivals, aborts, (flags & 1) != 0, skipped);
  }

  private static long zigzag(long v) {
    return (v << 1) ^ (v >> 63);
  }

  private static long unzigzag(long v) {
    return (v >>> 1) ^ -(v & 1);
  }

  private static final class Out {
    byte[] bytes = new byte[64];
    int size;

    void varint(long v) {
      if (bytes.length - size < 10) {
        bytes = Arrays.copyOf(bytes, bytes.length * 2);
      }
      while ((v & ~0x7FL) != 0) {
        bytes[size++] = (byte) ((v & 0x7F) | 0x80);
        v >>>= 7;
      }
      bytes[size++] = (byte) v;
    }
  }

  private static final class In {
    final byte[] bytes;
    int position;

    In(byte[] bytes) {
      this.bytes = bytes;
    }

    int readByte() {
      if (position >= bytes.length) {
        throw malformed("truncated");
      }
      return bytes[position++] & 0xFF;
    }

    long varint() {
      long v = 0;
      for (int shift = 0; shift < 64; shift += 7) {
        int b = readByte();
        v |= (long) (b & 0x7F) << shift;
        if ((b & 0x80) == 0) {
          return v;
        }
      }
      throw malformed("varint longer than 10 bytes");
    }

    int intValue(String what) {
      long v = varint();
      if (v < 0 || v > Integer.MAX_VALUE) {
        throw malformed(what + " " + v + " is not a non-negative int");
      }
      return (int) v;
    }

    /** A count that must also fit in the remaining bytes, so a corrupt one cannot OOM. */
    int count(String what) {
      int v = intValue(what);
      if (v > bytes.length - position) {
        throw malformed(
            what + " " + v + " exceeds the " + (bytes.length - position) + " bytes left");
      }
      return v;
    }

    IllegalArgumentException malformed(String why) {
      return new IllegalArgumentException(
          "malformed tick commands at byte "
              + position
              + " of "
              + bytes.length
              + ": "
              + why
              + "; decode only bytes made by TickCommands.encode");
    }
  }
}
