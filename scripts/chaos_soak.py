#!/usr/bin/env python3
"""The client of scripts/chaos-soak.sh: concurrent multi-turn conversations against a chaos
server (faults injected) for a set time, every answer checked against a reference server (no
cache, no faults) under greedy decoding; samples the chaos server's resident memory and open
files, and prints one summary. Exit status 1 on any wrong answer or failed request.

Conversations are token ids sent to /v1/completions, so that both servers see exactly the same
prompt and an answer is compared id by id (choices[0].token_ids). A conversation grows turn by
turn: the next prompt is the last prompt, the reference's answer and a new user turn, so the
chaos server finds its earlier pages in the device, host or L3 tier, or after eviction has to
load them back. Most conversations replay one of a pool of scripts (their prefixes come back
from the lower tiers); the rest are new.
"""

import argparse
import collections
import hashlib
import http.client
import json
import os
import random
import re
import sys
import threading
import time
import urllib.parse

VOCAB = 512


def post(url, body, timeout):
    """POSTs JSON; returns (status, parsed body or None, raw text)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        data = json.dumps(body).encode()
        conn.request("POST", parts.path, data, {"Content-Type": "application/json"})
        response = conn.getresponse()
        raw = response.read().decode("utf-8", "replace")
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        return response.status, parsed, raw
    finally:
        conn.close()


def get(url, timeout=30):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request("GET", parts.path)
        return conn.getresponse().read().decode("utf-8", "replace")
    finally:
        conn.close()


METRIC = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')


def metrics(url):
    """The Prometheus text of GET /metrics as {name{labels}: value}."""
    out = {}
    for line in get(url + "/metrics").splitlines():
        m = METRIC.match(line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def histogram_quantile(before, after, name, q):
    """The q-quantile of a histogram's observations between two scrapes: the upper bound of the
    first bucket that holds it (Prometheus's buckets are cumulative)."""
    buckets = []
    for key, value in after.items():
        if key.startswith(name + "_bucket{"):
            le = re.search(r'le="([^"]+)"', key).group(1)
            bound = float("inf") if le == "+Inf" else float(le)
            buckets.append((bound, value - before.get(key, 0.0)))
    buckets.sort()
    if not buckets or buckets[-1][1] <= 0:
        return None
    target = q * buckets[-1][1]
    for bound, count in buckets:
        if count >= target:
            return bound
    return None


def words(rng, n):
    """n token ids of a 'user turn': byte-level tokens, as text would give, plus a few specials."""
    return [rng.randrange(32, 127) if rng.random() < 0.9 else rng.randrange(256, VOCAB)
            for _ in range(n)]


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.checked = 0
        self.wrong = []
        self.failed = collections.Counter()
        self.failed_examples = {}
        self.latencies = []
        self.cached_tokens = 0
        self.prompt_tokens = 0
        self.by_tier = collections.Counter()
        self.conversations = 0
        self.reference_calls = 0


class Reference:
    """The reference answers, by prompt: each distinct prompt is asked once."""

    def __init__(self, url, max_tokens, timeout, stats):
        self.url = url
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.stats = stats
        self.lock = threading.Lock()
        self.answers = {}

    def answer(self, prompt):
        key = hashlib.sha256(json.dumps(prompt).encode()).hexdigest()
        with self.lock:
            if key in self.answers:
                return self.answers[key]
        for attempt in range(5):
            status, body, raw = post(self.url + "/v1/completions", request(prompt, self.max_tokens),
                                     self.timeout)
            if status == 200 and body:
                break
            time.sleep(1 + attempt)
        else:
            raise RuntimeError("the reference server failed: HTTP %d %s" % (status, raw[:200]))
        choice = body["choices"][0]
        result = (tuple(choice["token_ids"]), choice["finish_reason"])
        with self.lock:
            self.answers[key] = result
            self.stats.reference_calls += 1
        return result


def request(prompt, max_tokens):
    return {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}


MODEL = "kvtier-tiny"


def client(index, args, deadline, reference, stats):
    rng = random.Random(args.seed * 1000 + index)
    systems = [words(random.Random(args.seed + 17 * s), 48 + 16 * s) for s in range(3)]
    while time.monotonic() < deadline:
        # A script of the pool (its prefixes were cached before) or a new conversation.
        if rng.random() < args.new_share:
            script = rng.randrange(1 << 30) + args.scripts
        else:
            script = rng.randrange(args.scripts)
        srng = random.Random(args.seed * 7919 + script)
        prompt = list(systems[script % len(systems)])
        turns = srng.randrange(2, args.turns + 1)
        with stats.lock:
            stats.conversations += 1
        for _ in range(turns):
            if time.monotonic() >= deadline:
                return
            prompt = prompt + words(srng, srng.randrange(12, 32))
            if len(prompt) + args.max_tokens > args.context:
                break
            start = time.monotonic()
            try:
                status, body, raw = post(args.chaos + "/v1/completions",
                                         request(prompt, args.max_tokens), args.timeout)
            except Exception as e:  # a connection reset, a timeout: a failed request
                status, body, raw = 0, None, "%s: %s" % (type(e).__name__, e)
            elapsed = time.monotonic() - start
            expected = reference.answer(prompt)
            with stats.lock:
                stats.requests += 1
                if status != 200 or not body or "choices" not in body:
                    message = raw
                    if body and isinstance(body.get("error"), dict):
                        message = body["error"].get("message", raw)
                    reason = "HTTP %d: %s" % (status, re.sub(r"\d+", "N", message)[:160])
                    stats.failed[reason] += 1
                    stats.failed_examples.setdefault(reason, message[:400])
                    break
                stats.latencies.append(elapsed)
                choice = body["choices"][0]
                got = (tuple(choice.get("token_ids", ())), choice.get("finish_reason"))
                stats.checked += 1
                if got != expected:
                    stats.wrong.append({"prompt_tokens": len(prompt), "expected": expected,
                                        "got": got, "kvtier": body.get("kvtier")})
                usage = body.get("usage", {})
                stats.prompt_tokens += usage.get("prompt_tokens", 0)
                stats.cached_tokens += usage.get("prompt_tokens_details", {}).get(
                    "cached_tokens", 0)
                for tier, n in (body.get("kvtier", {}).get("cached_tokens") or {}).items():
                    stats.by_tier[tier] += n
            # The conversation goes on with the reference's answer, whatever the chaos server said.
            prompt = prompt + list(expected[0])


def proc_sample(pid):
    """(VmRSS kB, open files) of a process, or None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss, len(os.listdir("/proc/%d/fd" % pid))
    except (OSError, StopIteration):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chaos", required=True, help="URL of the server under faults")
    parser.add_argument("--reference", required=True, help="URL of the cache-off reference")
    parser.add_argument("--pid", type=int, required=True, help="the chaos server's process")
    parser.add_argument("--duration", type=float, default=60, help="seconds of load")
    parser.add_argument("--clients", type=int, default=8, help="concurrent conversations")
    parser.add_argument("--scripts", type=int, default=24, help="conversations replayed")
    parser.add_argument("--new-share", type=float, default=0.25, help="share of new ones")
    parser.add_argument("--turns", type=int, default=6, help="most turns of a conversation")
    parser.add_argument("--max-tokens", type=int, default=12, help="tokens of each answer")
    parser.add_argument("--context", type=int, default=256, help="the model's context")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per request")
    parser.add_argument("--sample-every", type=float, default=5, help="seconds between samples")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model", default="kvtier-tiny", help="the served model's id")
    parser.add_argument("--json", help="also write the summary to this file")
    args = parser.parse_args()
    globals()["MODEL"] = args.model

    stats = Stats()
    reference = Reference(args.reference, args.max_tokens, args.timeout, stats)
    before = metrics(args.chaos)
    samples = []
    started = time.monotonic()
    deadline = started + args.duration
    done = threading.Event()

    def l3_bytes():
        try:
            return int(metrics(args.chaos).get("kvtier_l3_store_bytes", 0))
        except OSError:
            return 0

    def sampler():
        while True:
            s = proc_sample(args.pid)
            if s is None:
                return
            samples.append((time.monotonic() - started,) + s + (l3_bytes(),))
            if done.wait(args.sample_every):
                return

    threading.Thread(target=sampler, daemon=True).start()
    threads = [threading.Thread(target=client, args=(i, args, deadline, reference, stats))
               for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    done.set()
    time.sleep(0.2)
    last = proc_sample(args.pid)
    if last is not None:
        samples.append((wall,) + last + (l3_bytes(),))
    after = metrics(args.chaos)

    def delta(key):
        return int(after.get(key, 0) - before.get(key, 0))

    lat = sorted(stats.latencies)

    def pct(q):
        return lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")

    ttft_p99 = histogram_quantile(before, after, "kvtier_time_to_first_token_seconds", 0.99)
    ttft_p50 = histogram_quantile(before, after, "kvtier_time_to_first_token_seconds", 0.50)
    faults = {
        "copy failures: backups failed": delta('kvtier_cache_backups_total{outcome="failed"}'),
        "copy failures or flips: loads failed": delta('kvtier_cache_loads_total{outcome="failed"}'),
        "host flips caught by CRC32C": delta('kvtier_cache_restore_checks_total{outcome="mismatch"}'),
        "host blocks checked": delta('kvtier_cache_restore_checks_total{outcome="checked"}'),
        "requests recomputed after a failed load": delta("kvtier_cache_load_recomputes_total"),
        "tokens recomputed after a failed load":
            delta('kvtier_tokens_total{kind="recomputed_after_load_failure"}'),
        "L3 pages dropped at put (injected)": delta("kvtier_store_faulty_dropped_total"),
        "L3 gets cut short (injected)": delta("kvtier_store_faulty_failed_total"),
        "L3 calls thrown (injected)": delta("kvtier_store_faulty_thrown_total"),
        "L3 stored bits flipped (injected)": delta("kvtier_store_faulty_flipped_total"),
        "L3 pages the store found corrupt": delta('kvtier_l3_store_reads_total{outcome="corrupt"}'),
        "L3 writes failed": delta('kvtier_l3_writes_total{outcome="failed"}'),
        "L3 prefetches timed out": delta('kvtier_l3_prefetches_total{outcome="timed_out"}'),
        "L3 prefetches aborted": delta('kvtier_l3_prefetches_total{outcome="aborted"}'),
        "L3 prefetches done": delta('kvtier_l3_prefetches_total{outcome="done"}'),
    }
    engine_failed = {k: delta(k) for k in after if k.startswith("kvtier_requests_failed_total")}
    hits = {t: delta('kvtier_cache_hits_total{tier="%s"}' % t) for t in ("device", "host", "l3")}
    # The JVM's heap and the L3 store fill during the first half: the second half must be flat.
    warm = next((s for s in samples if s[0] >= 0.5 * wall), samples[-1] if samples else None)
    memory = {}
    if samples:
        memory = {
            "samples": len(samples),
            "rss_mb_first": round(samples[0][1] / 1024), "rss_mb_warm": round(warm[1] / 1024),
            "rss_mb_last": round(samples[-1][1] / 1024),
            "rss_mb_max": round(max(s[1] for s in samples) / 1024),
            "fds_first": samples[0][2], "fds_warm": warm[2], "fds_last": samples[-1][2],
            "fds_max": max(s[2] for s in samples),
            "l3_mb_warm": round(warm[3] / 2**20), "l3_mb_last": round(samples[-1][3] / 2**20),
        }
    summary = {
        "seconds": round(wall), "clients": args.clients, "conversations": stats.conversations,
        "requests": stats.requests, "checked": stats.checked, "wrong": len(stats.wrong),
        "failed": sum(stats.failed.values()), "failed_reasons": dict(stats.failed),
        "reference_calls": stats.reference_calls,
        "prompt_tokens": stats.prompt_tokens, "cached_tokens": stats.cached_tokens,
        "cached_by_tier": dict(stats.by_tier), "cache_hits_by_tier": hits,
        "ttft_p50_s_server": ttft_p50, "ttft_p99_s_server": ttft_p99,
        "latency_p50_s": round(pct(0.5), 4), "latency_p99_s": round(pct(0.99), 4),
        "faults": faults, "engine_failed": engine_failed, "memory": memory,
        "memory_series": [(round(t), r, f, b) for t, r, f, b in samples],
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)

    print("chaos soak: %d s, %d clients, %d conversations, %d requests (%d checked against the"
          " reference, %d distinct prompts asked of it)"
          % (wall, args.clients, stats.conversations, stats.requests, stats.checked,
             stats.reference_calls))
    print("  wrong answers: %d; failed requests: %d" % (len(stats.wrong), sum(stats.failed.values())))
    for reason, n in stats.failed.most_common():
        print("    %d x %s" % (n, stats.failed_examples[reason]))
    for w in stats.wrong[:5]:
        print("    wrong: %s" % json.dumps(w))
    print("  prompt tokens %d, cached %d (%.0f%%; by tier %s); cache hits (tokens) %s"
          % (stats.prompt_tokens, stats.cached_tokens,
             100.0 * stats.cached_tokens / max(1, stats.prompt_tokens), dict(stats.by_tier), hits))
    print("  TTFT (server histogram, bucket bound) p50 %s s, p99 %s s; request latency (client)"
          " p50 %.3f s, p99 %.3f s" % (ttft_p50, ttft_p99, pct(0.5), pct(0.99)))
    print("  faults (chaos server's /metrics, this run):")
    for k, v in faults.items():
        print("    %-45s %d" % (k, v))
    print("  engine request failures: %s" % engine_failed)
    if memory:
        print("  chaos server: VmRSS first %d MB, at half time (%.0f s) %d MB, last %d MB, max %d MB;"
              " open files first %d, at half time %d, last %d, max %d (%d samples)"
              % (memory["rss_mb_first"], warm[0], memory["rss_mb_warm"], memory["rss_mb_last"],
                 memory["rss_mb_max"], memory["fds_first"], memory["fds_warm"],
                 memory["fds_last"], memory["fds_max"], memory["samples"]))
        print("  the L3 store's pages (off-heap, in the chaos server; kvtier_l3_store_bytes, rank 0):"
              " at half time %d MB, last %d MB" % (memory["l3_mb_warm"], memory["l3_mb_last"]))
        rss_growth = memory["rss_mb_last"] - memory["rss_mb_warm"]
        fd_growth = memory["fds_last"] - memory["fds_warm"]
        print("  over the second half: VmRSS %+d MB, open files %+d (%s)"
              % (rss_growth, fd_growth,
                 "flat" if fd_growth <= 4 and rss_growth <= max(64, 0.15 * memory["rss_mb_warm"])
                 else "GROWING: look at memory_series of --json"))
    if stats.requests == 0:
        print("chaos soak: FAILED: no request was answered")
        return 1
    if stats.wrong or stats.failed:
        print("chaos soak: FAILED: %d wrong answers, %d failed requests"
              % (len(stats.wrong), sum(stats.failed.values())))
        return 1
    print("chaos soak: passed: every answer equals the reference's, no request failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
