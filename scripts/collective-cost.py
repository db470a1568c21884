#!/usr/bin/env python3
"""What the tensor-parallel activation sums cost per token over each collective.

    scripts/collective-cost.py --model ../shared/models/tinyllamas-stories-260k-f32.gguf
    scripts/collective-cost.py --model /tmp/smollm-135m-f32.gguf --ranks 3 --tokens 16
    scripts/collective-cost.py --model FILE.gguf --setups one,hazelcast -- --max-context 1024

Serves a GGUF model with `kvtier serve` in each setup, one after the other: one rank ("one"), then
--ranks R ranks (default 2; a divisor of the model's KV heads) joined by the local collective
(threads of one process), by mpi (R processes under mpirun) and by hazelcast (R processes, and
with R < 3 as many `kvtier cp-member`s as the CP subsystem's 3 members need, on loopback). In each it sends the
same requests one at a time, after --warmup of them: --repeats requests of --prompt tokens with
max_tokens 1 (prefill and the first token), then --repeats with max_tokens --tokens. The servers
run with --no-prefix-cache, so every prompt is computed.

Per setup it prints prefill (ms for the prompt, tokens/s), decode (ms per generated token, past
the first, and tokens/s), and from rank 0's /metrics (kvtier_collective_latency_seconds, per op
and call site) the collective calls per decoded token and the time rank 0 spent in them per
token: "tp" is the model's partial sums (2 SUM allReduces per layer per token), "engine" the
rank group's own calls (schedule broadcasts, commits). Rank 0's time in a call includes waiting
for the slower rank. The last column is the decode time per token over one rank's.

mpi is skipped, saying why, without mpirun on the PATH or the mpi collective (libmpi); every
other failure to start names the setup and prints its log. Options after -- go to every
kvtier serve. Needs the jars (./mvnw -B -q package -DskipTests); bin/kvtier finds a JDK 25.
Exit status: 0 when every setup ran or was skipped, 1 if one failed, 2 on a usage error.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
KVTIER = os.path.join(ROOT, "bin", "kvtier")
SETUPS = ("one", "local", "mpi", "hazelcast")
START_SECONDS = 300
METRIC = re.compile(r'^kvtier_collective_latency_seconds_(count|sum)\{([^}]*)\}\s+(\S+)$')
LABEL = re.compile(r'(\w+)="([^"]*)"')


class Skipped(Exception):
    """A setup this machine cannot run, with the reason."""


def parse_args():
    parser = argparse.ArgumentParser(
        prog="scripts/collective-cost.py",
        description="Cost per token of the tensor-parallel sums over each collective.")
    parser.add_argument("--model", required=True, help="the GGUF file to serve")
    parser.add_argument("--setups", default=",".join(SETUPS),
                        help="comma-separated, of " + ", ".join(SETUPS) + " (default: all)")
    parser.add_argument("--ranks", type=int, default=2,
                        help="ranks of the multi-rank setups (default 2)")
    parser.add_argument("--prompt", type=int, default=64, help="prompt tokens (default 64)")
    parser.add_argument("--tokens", type=int, default=64,
                        help="max_tokens of the decode requests (default 64)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="requests of each kind measured (default 5)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="decode requests before measuring, for the JIT (default 3)")
    parser.add_argument("serve", nargs="*", help="after --: more kvtier serve options")
    args = parser.parse_args()
    setups = [s.strip() for s in args.setups.split(",") if s.strip()]
    unknown = [s for s in setups if s not in SETUPS]
    if unknown or not setups:
        parser.error("--setups " + args.setups + ": give some of " + ", ".join(SETUPS))
    if args.ranks < 2:
        parser.error("--ranks must be at least 2: the one-rank setup is \"one\"")
    if args.prompt < 1 or args.tokens < 2 or args.repeats < 1 or args.warmup < 0:
        parser.error("--prompt must be at least 1, --tokens at least 2 (one decoded token past"
                     " the first), --repeats at least 1, --warmup at least 0")
    if not os.path.isfile(args.model):
        parser.error("--model " + args.model + " is not a file")
    args.setups = setups
    return args


class Group:
    """The processes of one setup, their logs in a directory, stopped through rank 0."""

    def __init__(self, name, logs):
        self.name = name
        self.logs = logs
        self.processes = []

    def start(self, command, log, env=None):
        with open(os.path.join(self.logs, log), "wb") as out:
            self.processes.append(subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))

    def log(self, name="rank-0.log"):
        with open(os.path.join(self.logs, name), errors="replace") as f:
            return f.read()

    def await_serving(self):
        """Rank 0's URL and process id, once its log says where it listens."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            text = self.log()
            port = re.search(r"listening on http://[^:]+:(\d+),", text)
            pid = re.search(r"serves in process (\d+);", text)
            if port and (pid or len(self.processes) == 1 and self.name in ("one", "local")):
                return ("http://127.0.0.1:" + port.group(1),
                        int(pid.group(1)) if pid else self.processes[0].pid)
            if self.processes[0].poll() is not None:
                raise RuntimeError(self.name + ": rank 0 ended before it served:\n" + text)
            time.sleep(0.2)
        raise RuntimeError(self.name + ": rank 0 did not serve within "
                           + str(START_SECONDS) + " s:\n" + self.log())

    def stop(self, rank0_pid):
        """SIGTERM to rank 0 ends the group; what still runs after 60 s is killed."""
        try:
            os.kill(rank0_pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 60
        for p in self.processes:
            if p.args[:2] == [KVTIER, "cp-member"]:
                continue
            try:
                p.wait(max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self):
        for p in self.processes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def start(setup, model, ranks, serve, logs):
    """Starts a setup's processes, of ranks ranks unless it is "one"; returns its Group."""
    group = Group(setup, logs)
    base = [KVTIER, "serve", "--port", "0", "--model", model, "--no-prefix-cache"] + serve
    if setup == "one":
        group.start(base, "rank-0.log")
    elif setup == "local":
        group.start(base + ["--ranks", str(ranks)], "rank-0.log")
    elif setup == "mpi":
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            raise Skipped("mpirun is not on the PATH (apt-get install openmpi-bin)")
        backends = subprocess.run([KVTIER, "backends"], capture_output=True, text=True).stdout
        if not re.search(r"^collective\s+mpi\s+available\b", backends, re.M):
            raise Skipped("the mpi collective is unavailable here: "
                          + next((line for line in backends.splitlines()
                                  if re.match(r"collective\s+mpi\b", line)), "not listed"))
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        group.start([mpirun, "--oversubscribe", "--bind-to", "none", "--mca", "btl",
                     "self,vader", "-np", str(ranks)] + base + ["--collective", "mpi"],
                    "rank-0.log", env)
    else:
        cp_members = max(0, 3 - ranks)
        port = 20000 + 10 * random.randrange(2000)
        settings = ["hazelcast.cluster-name=kvtier-cost-%d-%d" % (os.getpid(), port),
                    "hazelcast.port=%d" % port, "hazelcast.port-count=%d" % (ranks + cp_members + 2),
                    "hazelcast.members=127.0.0.1"]
        properties = [a for s in settings for a in ("--collective-property", s)]
        for r in range(ranks):
            group.start(base + ["--collective", "hazelcast", "--ranks", str(ranks), "--rank",
                                str(r)] + properties, "rank-%d.log" % r)
        for m in range(cp_members):
            group.start([KVTIER, "cp-member"] + settings, "cp-member-%d.log" % m)
    return group


def get(url):
    with urllib.request.urlopen(url, timeout=600) as answer:
        return answer.read().decode()


def complete(base, model, prompt, max_tokens):
    """Seconds for one completion."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens}).encode()
    request = urllib.request.Request(base + "/v1/completions", body,
                                     {"Content-Type": "application/json"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as answer:
        answer.read()
    return time.perf_counter() - began


def stream(base, model, prompt, max_tokens):
    """One streamed completion: (seconds from its first token's event to its last's, tokens
    generated); fewer tokens than max_tokens if the model ended its text."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens,
                       "stream": True, "stream_options": {"include_usage": True}}).encode()
    request = urllib.request.Request(base + "/v1/completions", body,
                                     {"Content-Type": "application/json"})
    first = last = None
    generated = 0
    with urllib.request.urlopen(request, timeout=600) as answer:
        for line in answer:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[len("data: "):])
            if event.get("choices"):
                last = time.perf_counter()
                first = first or last
            if event.get("usage"):
                generated = event["usage"]["completion_tokens"]
    return (last - first if first else 0.0), generated


def collective_calls(base):
    """(op, tag) -> [calls, seconds] of rank 0's collective calls so far."""
    calls = {}
    for line in get(base + "/metrics").splitlines():
        m = METRIC.match(line)
        if m:
            labels = dict(LABEL.findall(m.group(2)))
            entry = calls.setdefault((labels.get("op"), labels.get("tag")), [0.0, 0.0])
            entry[0 if m.group(1) == "count" else 1] += float(m.group(3))
    return calls


def delta(after, before):
    return {k: [v[0] - before.get(k, [0, 0])[0], v[1] - before.get(k, [0, 0])[1]]
            for k, v in after.items()}


def measure(base, args, ranks_here):
    """Prefill and decode times, and rank 0's collective calls per decoded token; ranks_here is
    the ranks whose calls rank 0's /metrics count (both, when they are threads of its process),
    which the calls are divided by."""
    models = json.loads(get(base + "/v1/models"))
    model = models["data"][0]["id"]
    # Ids every vocabulary of 260 or more tokens holds, none of them BOS or EOS.
    prompt = [3 + (i * 37) % 250 for i in range(args.prompt)]
    for _ in range(args.warmup):
        complete(base, model, prompt, args.tokens)
    before = collective_calls(base)
    prefill = [complete(base, model, prompt, 1) for _ in range(args.repeats)]
    middle = collective_calls(base)
    full = [stream(base, model, prompt, args.tokens) for _ in range(args.repeats)]
    after = collective_calls(base)
    first, second = delta(middle, before), delta(after, middle)
    decoded = sum(tokens - 1 for _, tokens in full)
    if decoded < 1:
        raise RuntimeError("the model ended every text at its first token: give another --prompt")
    per_token = {}
    for key in set(first) | set(second):
        # The decode requests' calls less those of as many prefill-only requests.
        calls = second.get(key, [0, 0])[0] - first.get(key, [0, 0])[0]
        seconds = second.get(key, [0, 0])[1] - first.get(key, [0, 0])[1]
        per_token[key] = (calls / decoded / ranks_here, seconds * 1000 / decoded / ranks_here)
    prefill_ms = 1000 * sorted(prefill)[len(prefill) // 2]
    decode_ms = 1000 * sum(seconds for seconds, _ in full) / decoded
    return {"prefill_ms": prefill_ms, "decode_ms": decode_ms, "per_token": per_token}


def summary(per_token, tp):
    calls = sum(c for (op, tag), (c, _) in per_token.items() if (tag == "tp") == tp)
    ms = sum(m for (op, tag), (_, m) in per_token.items() if (tag == "tp") == tp)
    return calls, ms


def main():
    args = parse_args()
    if not os.path.isdir(os.path.join(ROOT, "modules", "cli", "target", "lib")):
        print("collective-cost: build the jars first: ./mvnw -B -q package -DskipTests",
              file=sys.stderr)
        return 2
    print("model %s; %d ranks; prompt %d tokens, max_tokens %d, %d requests of each, %d warm-up;"
          " serve %s" % (os.path.basename(args.model), args.ranks, args.prompt, args.tokens,
                         args.repeats, args.warmup, " ".join(args.serve) or "(defaults)"))
    print("%-10s %11s %10s %12s %10s %9s %11s %11s %11s %10s" % (
        "setup", "prefill ms", "prefill/s", "decode ms/t", "decode/s", "tp calls",
        "tp ms/t", "engine calls", "engine ms/t", "vs one"))
    failed = False
    one_ms = None
    for setup in args.setups:
        logs = tempfile.mkdtemp(prefix="kvtier-cost-" + setup + "-")
        group = None
        try:
            group = start(setup, os.path.abspath(args.model), args.ranks, args.serve, logs)
            base, rank0 = group.await_serving()
            try:
                result = measure(base, args, args.ranks if setup == "local" else 1)
            finally:
                group.stop(rank0)
        except Skipped as e:
            print("%-10s skipped: %s" % (setup, e))
            continue
        except Exception as e:  # a failed setup: say which and why, then go on
            print("%-10s failed: %s (logs in %s)" % (setup, e, logs))
            if group is not None:
                group.kill()
            failed = True
            continue
        tp_calls, tp_ms = summary(result["per_token"], True)
        engine_calls, engine_ms = summary(result["per_token"], False)
        if setup == "one":
            one_ms = result["decode_ms"]
        print("%-10s %11.1f %10.0f %12.2f %10.1f %9.1f %11.2f %11.1f %11.2f %10s" % (
            setup, result["prefill_ms"], 1000 * args.prompt / result["prefill_ms"],
            result["decode_ms"], 1000 / result["decode_ms"], tp_calls, tp_ms, engine_calls,
            engine_ms, "" if one_ms is None or setup == "one"
            else "%+.2f ms" % (result["decode_ms"] - one_ms)))
        for (op, tag), (calls, ms) in sorted(result["per_token"].items()):
            if calls > 0.01:
                print("%-10s   %s %s: %.2f calls per token, %.3f ms per call"
                      % ("", op, tag, calls, ms / calls))
        shutil.rmtree(logs, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
