#!/usr/bin/env python3
"""Runs every shell command of the docs' ```bash blocks and checks its exit status.

    scripts/readme-commands.py            # run them all (after the build: bin/kvtier needs the jars)
    scripts/readme-commands.py --list     # only say what would run, skip or be excluded, and why
    scripts/readme-commands.py docs/SERVE.md   # only the files named

The files: README.md, every docs/*.md, the backend READMEs (backend-cpu, backend-cuda,
collective-hazelcast, collective-mpi) and examples/README.md; each output line starts with FILE:LINE. Each command (a
line, with its backslash continuations, or more lines while a quote or a here-document is open)
runs on its own with bash, in a scratch directory made fresh for its block, which holds links to
bin/ and scripts/ (so that out.json and the like land there, not in the checkout, and a file one
command of a block writes is there for the next); ./mvnw lines run in the repository root.
Lines that export a variable apply to the commands after them in the same block; JAVA_HOME is
removed from the environment, so a line works only if it works as written. The expected exit status is 0,
or N where the line ends with a comment "# exit N". A command that serves until stopped
(kvtier serve, kvtier cp-member) passes when it is still running after SERVER_SECONDS, or
READY_SECONDS after it printed that it listens ("kvtier serve: listening on http://...").
A block whose first command ends with "&" is a session (a server in the background, clients,
then "kill %1"): it runs as one bash script with "set -e", and passes when the script exits 0;
background jobs still alive at its end are stopped.
A command that is, as it would run (after smoke()), byte for byte one that has passed earlier
in the same run, with the same environment, the same expected status and a scratch directory
holding the same files (names, link targets, contents) as before that run, which it left
unchanged, is not run again: it prints "ok (same as FILE:LINE, not run again)". Commands that
run in the repository root (./mvnw), name an absolute path (a file outside the scratch
directory, which a command in between may have changed) or write into the scratch directory
always run.

Not run, each with its reason printed:
  - the README's test command and its variants (./mvnw ... verify): they are what runs this
    script (.ci/run), so running them here would recurse;
  - the build command (./mvnw ... package -DskipTests): it has run before this script, which
    needs its jars;
  - mpirun lines: ranks as MPI processes are SimulateRankProcessesTest's (it skips, saying why,
    without mpirun), and as root mpirun refuses to start without --allow-run-as-root;
  - lines that need a GPU (--device cuda);
  - lines with a placeholder a reader fills in (--rank r, <words in angle brackets>);
  - lines that name ../shared/ (models, traces) where it is absent beside the repository;
The commands of docs/PERFORMANCE.md are measurements that take minutes each (the figures there
are their record). They run in smoke form: the same command with its sizes cut by the table in
smoke() (fewer ticks, conversations, iterations; one 100 ms JMH iteration of one fork, no
warmup) and SMOKE_ENV set, so that every benchmark tool, option and file it names is checked
on each run while the figures themselves are not; --list shows each command as it would run.
Exit status: 0 when every command run ended as expected, 1 otherwise.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER_SECONDS = 15
# A server that has printed READY passes when it still runs READY_SECONDS later (with no
# client, nothing it does after that line differs from what it did before it).
READY = re.compile(rb"(?m)^kvtier serve: listening on http://")
READY_SECONDS = 3
# What a follower rank prints at a first SIGTERM (it waits for its rank 0; a second ends it).
FOLLOWER = re.compile(rb"(?m)^kvtier serve: rank \d+ stops when rank 0 stops the group; signal it"
                      rb" again to end it now")
TIMEOUT_SECONDS = 600


# The files whose bash blocks run, from the repository root; docs/*.md are added in order.
FILES = ["README.md", "backend-cpu/README.md", "backend-cuda/README.md",
         "collective-hazelcast/README.md", "collective-mpi/README.md", "examples/README.md"]
# Files whose commands are measurements, minutes each: they run in smoke form (smoke()).
MEASUREMENTS = {"docs/PERFORMANCE.md"}
# The environment of a smoke run: scripts/hybrid-sweep.sh's sweep cut to one interval, short
# simulate runs and one workload.
SMOKE_ENV = {"INTERVALS": "8", "SIM_OPTS": "--ticks 2000", "WORKLOADS": "multiturn|",
             "DEVICE": "1M"}


def set_option(code, name, value):
    """The command with option name's value replaced by value, or the option added."""
    pattern = r"(?<!\S)" + re.escape(name) + r"(\s+|=)\S+"
    if re.search(pattern, code):
        return re.sub(pattern, lambda m: name + m.group(1) + value, code, count=1)
    return code + " " + name + " " + value


def first_of_list(code, name):
    """Keeps the first value of a comma-separated option (a sweep cut to one point)."""
    return re.sub(r"(?<!\S)(" + re.escape(name) + r"\s+)([^\s,]+)(,\S+)",
                  lambda m: m.group(1) + m.group(2), code)


def smoke(command):
    """A measurement's command as its smoke run: the same tool and options, sizes cut.

    Returns (command to run, None), or (None, why it is not run)."""
    code = re.sub(r"\s+#.*$", "", command)
    # Files an earlier command of the block makes from ../shared: the x4 trace, the 135M model.
    made = ("mooncake-synthetic-x4", "/tmp/smollm-135m")
    if any(m in code for m in made) and not os.path.isdir(os.path.join(os.path.dirname(ROOT),
                                                                        "shared")):
        return None, "skipped: made from ../shared (a trace or a vocabulary), absent here"
    if re.search(r"\./mvnw\b.*\btest\b.*-Dtest=", code):
        return None, "excluded: a test the Maven stage ran before this script"
    if re.search(r"\bbin/kvtier simulate\b", code):
        code = set_option(code, "--ticks", "3000")
    if re.search(r"\bbin/kvtier replay\b", code):
        for name in ("--device-tokens", "--host-ratio", "--eviction"):
            code = first_of_list(code, name)
    if "modules/bench/run.sh" in code:
        # Every benchmark and parameter set still runs, in a fork of its own (its setup, its
        # @Benchmark and the result file); the time is the forks' start-ups, not 2 s each.
        code = code + " -f 1 -wi 0 -i 1 -r 100ms"
    if "scripts/serve-bench.sh" in code:
        code = set_option(set_option(code, "--conversations", "2"), "--turns", "2")
        # Prompts cut to the benchmark's defaults (about 40 tokens of system prompt, more than
        # two pages, and 16-byte questions): the 135M model's prefill of 400-token prompts is
        # most of its smoke run otherwise.
        for name, value in (("--system", "100"), ("--question", "16")):
            if re.search(r"(?<!\S)" + re.escape(name) + r"(\s|=)", code):
                code = set_option(code, name, value)
    if "scripts/fault-matrix.sh" in code:
        code = 'RANKS=2 L3S=memory POLICIES=write_through MIXES=full TICKS=200 ' + code
    if "scripts/speculative-bench.sh" in code:
        # Its second argument is the tokens a completion: 4 check the three servers and drafts.
        code = re.sub(r"(scripts/speculative-bench\.sh\s+\S+)(\s+\d+)?", r"\1 4", code)
    if "scripts/chaos-soak.sh" in code:
        # The soak's length is DURATION (seconds): 10 s checks the servers, faults and client.
        code = re.sub(r"\bDURATION=\S+\s*", "", code)
        code = "DURATION=10 " + code
    if "scripts/route-bench.sh" in code:
        for name, value in (("--conversations", "2"), ("--turns", "2"), ("--requests", "8"),
                            ("--clients", "2"), ("--documents", "2")):
            code = set_option(code, name, value)
    if "scripts/pd-bench.sh" in code:
        # Tiny loads: each setup's processes start, route and answer, the figures print.
        for name, value in (("--long", "1"), ("--short", "1"), ("--clients", "2"),
                            ("--long-prompt", "128"), ("--short-answer", "8")):
            code = set_option(code, name, value)
    if "scripts/collective-cost.py" in code:
        # Its own options go before "--" (what follows is kvtier serve's).
        own, sep, serve = code.partition(" -- ")
        for name, value in (("--prompt", "8"), ("--tokens", "2"), ("--repeats", "1"),
                            ("--warmup", "0")):
            own = set_option(own, name, value)
        code = own + sep + serve
    if "collective-mpi/bench.sh" in code:
        for name, value in (("--repeats", "1"), ("--ranks", "2"), ("--iterations", "50"),
                            ("--warmup", "100"), ("--rounds", "3")):
            code = set_option(code, name, value)
    if "collective-hazelcast/bench.sh" in code:
        for name, value in (("--repeats", "1"), ("--blocks", "2"), ("--per-block", "20"),
                            ("--warmup", "20")):
            code = set_option(code, name, value)
    return code, None


def doc_files():
    docs = sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                  if f.endswith(".md"))
    return [FILES[0]] + docs + FILES[1:]


def open_quote_or_heredoc(command):
    """True while a command's single or double quote, or a here-document, is still open."""
    m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", command)
    if m and not re.search(r"^\s*" + m.group(1) + r"\s*$", command[m.end():], re.M):
        return True
    quote = None
    code = re.sub(r"\\.", "", command)
    i = 0
    while i < len(code):
        c = code[i]
        if quote is None and c == "#" and (i == 0 or code[i - 1].isspace()):
            # a comment, to the end of its line
            end = code.find("\n", i)
            i = len(code) if end < 0 else end
            continue
        if quote is None and c in "'\"":
            quote = c
        elif c == quote:
            quote = None
        i += 1
    return quote is not None


def commands(readme):
    """(line number, command, block index) for every command of every bash block."""
    text = open(readme, encoding="utf-8").read()
    out = []
    for block, m in enumerate(re.finditer(r"^```bash\n(.*?)^```", text, re.S | re.M)):
        first = text[: m.start(1)].count("\n") + 1
        lines = m.group(1).split("\n")
        i = 0
        while i < len(lines):
            start = i
            line = lines[i]
            while i + 1 < len(lines):
                if line.endswith("\\"):
                    i += 1
                    line = line[:-1] + " " + lines[i].strip()
                elif open_quote_or_heredoc(line):
                    i += 1
                    line = line + "\n" + lines[i]
                else:
                    break
            i += 1
            if line.strip() and not line.strip().startswith("#"):
                out.append((first + start, line.strip(), block))
    return out


def expected_status(command):
    m = re.search(r"#\s*exit (\d+)\s*$", command)
    return int(m.group(1)) if m else 0


def verdict(command):
    """None to run it, else why it is not run."""
    code = re.sub(r"\s+#.*$", "", command)
    if re.search(r"\./mvnw\b.*\bverify\b", code):
        return "excluded: the README's test command (or a variant), which runs this script"
    if re.search(r"\./mvnw\b.*\bpackage\b.*-DskipTests", code):
        return "excluded: the build, which ran before this script and made the jars it needs"
    if code.startswith("mpirun ") or " mpirun " in code:
        return "skipped: needs mpirun ranks (SimulateRankProcessesTest runs them)"
    if "--device cuda" in code:
        return "skipped: needs a GPU"
    if "../shared/" in code and not os.path.isdir(os.path.join(os.path.dirname(ROOT), "shared")):
        return "skipped: needs ../shared beside the repository (models, traces), absent here"
    if re.search(r"--rank r\b", code):
        return "skipped: a placeholder (--rank r) for the reader to fill in"
    # Words in angle brackets, with a space among them: <PID that rank 0 printed>, not a
    # redirection.
    if re.search(r"<[A-Za-z][A-Za-z0-9]* [^<>]*>", code):
        return "skipped: a placeholder (<...>) for the reader to fill in"
    return None


# The benchmark launchers the docs name by their path from the repository root.
TOOLS = ["modules/bench/run.sh", "collective-mpi/bench.sh", "collective-hazelcast/bench.sh",
         "backend-cpu/bench.sh"]


def link_tools(scratch):
    # A link per file, not per folder: bin/kvtier and the scripts find the repository root
    # from their own path, following a link to the file but not one to its folder.
    for name in ("bin", "scripts"):
        os.makedirs(os.path.join(scratch, name))
        for f in os.listdir(os.path.join(ROOT, name)):
            os.symlink(os.path.join(ROOT, name, f), os.path.join(scratch, name, f))
    for tool in TOOLS:
        os.makedirs(os.path.join(scratch, os.path.dirname(tool)), exist_ok=True)
        os.symlink(os.path.join(ROOT, tool), os.path.join(scratch, tool))
    # ../shared (traces, models) as the docs name it from the repository root, where it exists.
    shared = os.path.join(os.path.dirname(ROOT), "shared")
    beside = os.path.join(os.path.dirname(scratch), "shared")
    if os.path.isdir(shared) and not os.path.exists(beside):
        os.symlink(shared, beside)


def is_server(command):
    return re.search(r"bin/kvtier (serve|cp-member)\b", command) is not None


def scratch_state(scratch):
    """What a command can read from its scratch directory: each path, link target and content."""
    digest = hashlib.sha256()
    for top, dirs, files in os.walk(scratch):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            path = os.path.join(top, name)
            digest.update(os.path.relpath(path, scratch).encode() + b"\0")
            if os.path.islink(path):
                digest.update(b"link " + os.readlink(path).encode() + b"\0")
            else:
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        digest.update(chunk)
                digest.update(b"\0")
    return digest.hexdigest()


def run_key(command, env, want, scratch):
    """The key under which a passed command is remembered, or None for one that always runs."""
    code = re.sub(r"\s+#.*$", "", command)
    if code.startswith("./mvnw") or "./mvnw " in code or re.search(r"(?<![\w.~])/\w", code):
        return None
    return (command, tuple(sorted(env.items())), want, scratch_state(scratch))


def run(command, env, scratch):
    code = re.sub(r"\s+#.*$", "", command)
    cwd = ROOT if code.startswith("./mvnw") or "./mvnw " in code else scratch
    if is_server(code):
        log = tempfile.TemporaryFile()
        p = subprocess.Popen(
            ["bash", "-c", code], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        # Until SERVER_SECONDS have passed, or READY_SECONDS after the server said it listens.
        started = time.monotonic()
        deadline = started + SERVER_SECONDS
        ready = False
        while p.poll() is None and time.monotonic() < deadline:
            if not ready:
                log.seek(0)
                ready = READY.search(log.read()) is not None
                if ready:
                    deadline = min(deadline, time.monotonic() + READY_SECONDS)
            time.sleep(0.2)
        alive = p.poll() is None
        waited = time.monotonic() - started
        # A server stops at SIGTERM; a follower rank waits for its rank 0 at the first and ends
        # at the second (docs/SERVE.md), sent as soon as it says so; whatever still runs then
        # is killed.
        for first, sig in ((True, 15), (False, 15), (False, 9)) if alive else ():
            log.seek(0)
            waits = len(FOLLOWER.findall(log.read()))
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
            stop_by = time.monotonic() + 20
            while p.poll() is None and time.monotonic() < stop_by:
                log.seek(0)
                if first and len(FOLLOWER.findall(log.read())) > waits:
                    break
                time.sleep(0.2)
            if p.poll() is not None:
                p.wait()
                break
        if not alive:
            p.wait(timeout=60)
        try:  # what of its process group outlived it
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        log.seek(0)
        output = log.read()
        log.close()
        return (0 if alive else p.returncode), output.decode(errors="replace"), (
            waited if alive else None)
    p = subprocess.run(
        ["bash", "-c", code], cwd=cwd, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, timeout=TIMEOUT_SECONDS)
    return p.returncode, p.stdout.decode(errors="replace"), None


def is_session(block_commands):
    return bool(block_commands) and re.sub(r"\s+#.*$", "", block_commands[0][1]).endswith("&")


def run_session(block_commands, env, scratch):
    script = "set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + "\n".join(
        c for _, c in block_commands)
    try:
        p = subprocess.run(
            ["bash", "-c", script], cwd=scratch, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, timeout=TIMEOUT_SECONDS, start_new_session=True)
    except subprocess.TimeoutExpired as e:
        return 124, (e.output or b"").decode(errors="replace")
    return p.returncode, p.stdout.decode(errors="replace")


def main():
    args = sys.argv[1:]
    listing = "--list" in args
    named = [a for a in args if not a.startswith("--")]
    jars = os.path.join(ROOT, "modules", "cli", "target", "lib")
    if not listing and not os.path.isdir(jars):
        # bin/kvtier would build (and install) the project itself: build it first, as .ci/run does.
        print("readme-commands: no " + jars + ": build first (./mvnw -B -q package -DskipTests)")
        return 2
    files = [f for f in doc_files() if os.path.isfile(os.path.join(ROOT, f))]
    if named:
        unknown = [n for n in named if os.path.normpath(n) not in files]
        if unknown:
            print("readme-commands: not one of the files it runs: " + ", ".join(unknown))
            return 2
        files = [f for f in files if f in {os.path.normpath(n) for n in named}]
    # As written: a line gets JAVA_HOME only if it (or an export before it) sets it.
    base_env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    passed = {}  # run_key -> FILE:LINE of the command that passed with it
    failed = 0
    ran = 0
    scratch_root = tempfile.mkdtemp(prefix="kvtier-readme-")
    started = time.time()
    try:
        for name in files:
            counts = run_file(name, listing, base_env, scratch_root, passed)
            ran += counts[0]
            failed += counts[1]
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)
    if not listing:
        print(f"readme-commands: {ran} commands run in {len(files)} files, {failed} failed"
              f" ({time.time() - started:.0f} s)")
    return 1 if failed else 0


def run_file(name, listing, base_env, scratch_root, passed):
    """Runs (or lists) one file's commands; returns (commands run, failed).

    passed maps the run_key of each command that has passed in this run to its FILE:LINE."""
    all_commands = commands(os.path.join(ROOT, name))
    if listing:
        print(f"{name}: {len(all_commands)} commands in "
              f"{len({b for _, _, b in all_commands})} bash blocks")
    failed = 0
    ran = 0
    env = dict(base_env)
    block_seen = -1
    by_block = {}
    scratch = None
    for number, command, block in all_commands:
        by_block.setdefault(block, []).append((number, command))
    for number, command, block in all_commands:
        where = f"{name}:{number}"
        if block != block_seen:
            env = dict(base_env)
            block_seen = block
            scratch = os.path.join(scratch_root, name.replace("/", "_") + "-" + str(number))
            if not listing:
                os.makedirs(scratch)
                link_tools(scratch)
            if is_session(by_block[block]):
                lines = by_block[block]
                what = f"lines {lines[0][0]}-{lines[-1][0]} as one session"
                absent = [why for why in (verdict(c) for _, c in lines)
                          if why and "../shared" in why]
                if absent:
                    print(f"{where}: {absent[0]}: {what}")
                    continue
                if listing:
                    print(f"{where}: would run {what}: {command} ...")
                    continue
                start = time.time()
                status, output = run_session(lines, env, scratch)
                ran += 1
                took = time.time() - start
                if status == 0:
                    print(f"{where}: ok ({what}, exit 0, {took:.0f} s)")
                else:
                    failed += 1
                    print(f"{where}: FAIL ({what}): exit {status} ({took:.0f} s)")
                    print("  " + "\n  ".join(output.rstrip().splitlines()[-15:]))
        if is_session(by_block[block]):
            continue
        shown = command.replace("\n", " \\n ")
        m = re.match(r"^export (\w+)=(\S+)$", command)
        if m:
            env[m.group(1)] = m.group(2)
            print(f"{where}: applied: {command}")
            continue
        why = verdict(command)
        want = expected_status(command)
        run_env = env
        if not why and name in MEASUREMENTS:
            command, why = smoke(command)
            if command:
                shown = "(smoke) " + command.replace("\n", " \\n ")
                run_env = dict(env, **SMOKE_ENV)
        if why:
            print(f"{where}: {why}: {shown}")
            continue
        if listing:
            print(f"{where}: would run (expect exit {want}): {shown}")
            continue
        key = run_key(command, run_env, want, scratch)
        if key in passed:
            print(f"{where}: ok (same as {passed[key]}, not run again): {shown}")
            continue
        start = time.time()
        status, output, served = run(command, run_env, scratch)
        ran += 1
        took = time.time() - start
        if status == want:
            what = (f"still serving after {served:.0f} s" if served is not None
                    else f"exit {status}")
            print(f"{where}: ok ({what}, {took:.0f} s): {shown}")
            # Only a command that left its scratch directory as it found it: a repeat that is
            # not run must not leave out files the commands after it read.
            if key is not None and key[-1] == scratch_state(scratch):
                passed[key] = where
        else:
            failed += 1
            print(f"{where}: FAIL: exit {status}, expected {want} ({took:.0f} s): {shown}")
            print("  " + "\n  ".join(output.rstrip().splitlines()[-15:]))
    return ran, failed


if __name__ == "__main__":
    sys.exit(main())
