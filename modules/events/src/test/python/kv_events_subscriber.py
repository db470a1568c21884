#!/usr/bin/env python3
"""An independent subscriber of kvtier's KV events, written from vLLM's schema with Debian's
python3-zmq and python3-msgpack (no kvtier code): joins a running replica, waits for the last
sequence number on stdin, has the gap before its first batch replayed, checks every block's hash
against its parent's and its tokens, and prints what it learned as key=value lines.

usage: kv_events_subscriber.py PUB_ENDPOINT REPLAY_ENDPOINT TOPIC
"""
import hashlib
import struct
import sys

import msgpack
import zmq


def main():
    pub, replay_endpoint, topic = sys.argv[1:4]
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.connect(pub)
    sub.setsockopt(zmq.SUBSCRIBE, topic.encode())
    batches = {}

    def receive(timeout_ms):
        if not sub.poll(timeout_ms):
            return False
        frames = sub.recv_multipart()
        assert len(frames) == 3, frames
        assert frames[0] == topic.encode(), frames[0]
        (seq,) = struct.unpack(">q", frames[1])
        batches[seq] = frames[2]
        return True

    while not receive(100):
        pass
    print("subscribed", min(batches), flush=True)
    last = int(sys.stdin.readline())
    while last not in batches:
        if not receive(10_000):
            sys.exit("no batch %d within 10 s" % last)

    first = min(batches)
    replayed = 0
    if first > 0:
        # vLLM's replay request: (empty delimiter, 8-byte start); replies (delimiter, seq, payload)
        # until seq -1.
        replay = ctx.socket(zmq.DEALER)
        replay.connect(replay_endpoint)
        replay.send_multipart([b"", struct.pack(">q", 0)])
        while True:
            if not replay.poll(10_000):
                sys.exit("no replay reply within 10 s")
            _, seq_bytes, payload = replay.recv_multipart()
            (seq,) = struct.unpack(">q", seq_bytes)
            if seq == -1:
                break
            if seq not in batches:
                batches[seq] = payload
                replayed += 1
    missing = [s for s in range(last + 1) if s not in batches]
    assert not missing, "gaps left: %s" % missing[:10]

    held, stored, removed, full = {}, {}, {}, {}
    cleared = links = 0
    for seq in range(last + 1):
        ts, events, dp_rank = msgpack.unpackb(batches[seq], raw=False)
        assert isinstance(ts, float) and dp_rank == 3, (ts, dp_rank)
        for event in events:
            tag = event[0]
            if tag == "AllBlocksCleared":
                assert seq == 0
                held.clear()
                cleared += 1
            elif tag == "BlockStored":
                _, hashes, parent, tokens, block_size, lora_id, medium = event
                assert lora_id is None
                blocks = held.setdefault(medium, set())
                previous = b""
                if parent is not None:
                    assert parent in blocks, "parent %x not held in %s" % (parent, medium)
                    previous = full[parent]
                    links += 1
                for i, h in enumerate(hashes):
                    page = tokens[i * block_size:(i + 1) * block_size]
                    previous = hashlib.sha256(previous + struct.pack("<%di" % block_size, *page)).digest()
                    assert h == struct.unpack(">Q", previous[:8])[0], "hash of block %d" % i
                    full[h] = previous
                    assert h not in blocks, "stored twice"
                    blocks.add(h)
                stored[medium] = stored.get(medium, 0) + len(hashes)
            elif tag == "BlockRemoved":
                _, hashes, medium = event
                blocks = held.setdefault(medium, set())
                for h in hashes:
                    blocks.remove(h)
                removed[medium] = removed.get(medium, 0) + len(hashes)
            else:
                sys.exit("unknown tag %r" % tag)
    for medium in sorted(set(stored) | set(removed)):
        print("stored.%s=%d" % (medium, stored.get(medium, 0)))
        print("removed.%s=%d" % (medium, removed.get(medium, 0)))
        print("held.%s=%d" % (medium, len(held.get(medium, ()))))
    print("first=%d" % first)
    print("replayed=%d" % replayed)
    print("cleared=%d" % cleared)
    print("links=%d" % links)


if __name__ == "__main__":
    main()
