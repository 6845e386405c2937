#!/usr/bin/env python3
"""Builds of one function side by side in one sitting: CPU per message,
page faults and peak RSS, the builds alternating (each round starting with the
next) so that the host's drift falls on all of them alike.

Each run is the benchmark's runtime-API harness (`bench lambda`) against
its stub: 1 cold + N warm invocations of one workload's event, capped at
the memory's CPU share (`--memory`, 128 MB by default) with every call
answered `--delay` ms late, as Lambda bills it; `--uncapped` lifts the cap.
CPU per message is the median of the warm invocations (the harness's
cgroup count); page faults (minor) and peak RSS are the function's own,
from `getrusage` of a parent process that waits for it, over the whole run.

    bench/profile/ab.py --workload kinesis-80x55KB --rounds 3 --warm 6 \\
        before=/tmp/a/kinesis-to-sqs after=target/release/kinesis-to-sqs
    bench/profile/ab.py --workload kinesis-80x55KB \\
        plain=target/release/kinesis-to-sqs \\
        nothp=target/release/kinesis-to-sqs:MIMALLOC_ALLOW_THP=0

A build is NAME=BINARY, with any environment variables for it after the
binary (`:K=V`, repeatable). CPU figures on a shared host move between
sittings: compare builds within one run, and read the page faults and the
peak, which do not depend on the host's load, beside them.

Needs the bench tools (`cargo build --profile bench-tools -p bench`) and
root for the cap (cgroup v1), as the benchmark does.
"""

import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
import run  # noqa: E402
import workloads  # noqa: E402

# The parent that runs the function and writes its rusage when it exits
# (the harness ends a run with SIGTERM, passed on).
WRAPPER = """
import resource, signal, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
signal.signal(signal.SIGTERM, lambda *_: child.terminate())
child.wait()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write(f"{ru.ru_maxrss} {ru.ru_minflt}\\n")
"""


def build(spec):
    """NAME=BINARY[:K=V...] -> (name, binary, {K: V})."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise SystemExit(f"a build is NAME=BINARY[:K=V...], not {spec!r}")
    binary, *env = rest.split(":")
    if not os.path.exists(binary):
        raise SystemExit(f"{name}: {binary} does not exist")
    pairs = {}
    for kv in env:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise SystemExit(f"{name}: {kv!r} is not K=V")
        pairs[k] = v
    return name, binary, pairs


def one(args, stub, w, env, name, binary, work):
    """One run of `binary`: (CPU µs per message, page faults, peak RSS MiB, problem)."""
    stub.call("/__reset", post=True)
    stub.delay(args.delay)
    usage = os.path.join(work, f"{name}.rusage")
    # The wrapper needs the grace to write the rusage once the function exits.
    out = run.harness(args.bench, stub, w["event"], 1 + args.warm, env,
                      [sys.executable, "-c", WRAPPER, usage, binary], os.path.join(work, f"{name}.log"),
                      name=run.FUNCTION[w["source"]], memory_mb=args.memory, cap=not args.uncapped, grace_s=5)
    if (out.get("problem") or "").startswith("harness failed"):
        return None, None, None, out["problem"]
    s = run.summarize(out, stub.stats(), w["messages"])
    try:
        with open(usage) as f:
            max_kib, faults = map(int, f.read().split())
    except (OSError, ValueError):
        max_kib, faults = None, None
    return s.get("cpu_us_per_msg"), faults, max_kib / 1024 if max_kib else None, s.get("problem")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="+", metavar="NAME=BINARY[:K=V...]")
    ap.add_argument("--workload", required=True, help="a workload of bench/workloads.py (kinesis-80x55KB, ...)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm", type=int, default=6, help="warm invocations after the cold one, each run")
    ap.add_argument("--memory", type=int, default=128, help="the function's memory, MB (its CPU share)")
    ap.add_argument("--delay", type=int, default=run.DELAY_MS, help="every AWS call answered this many ms late")
    ap.add_argument("--uncapped", action="store_true", help="no CPU cap")
    ap.add_argument("--bench", default=os.path.join(run.ROOT, "target", "bench-tools", "bench"))
    args = ap.parse_args()
    if args.rounds < 1 or args.warm < 1:
        raise SystemExit("--rounds and --warm must be at least 1")
    builds = [build(b) for b in args.builds]
    if len({n for n, _, _ in builds}) != len(builds):
        raise SystemExit("each build needs its own name")
    if not os.path.exists(args.bench):
        raise SystemExit(f"{args.bench} is missing: cargo build --profile bench-tools -p bench")
    work = tempfile.mkdtemp(prefix="ab-")
    every = workloads.write(os.path.join(work, "events"))
    ws = [w for w in every if w["name"] == args.workload]
    if not ws:
        raise SystemExit(f"no workload {args.workload!r}; one of: {', '.join(w['name'] for w in every)}")
    w = ws[0]
    if w["source"] == "rabbitmq":
        raise SystemExit("the RabbitMQ drain needs its queue filled before each run: use bench/run.sh")
    stub = run.Stub(args.bench, [w["object"]] if "object" in w else [])
    runs = {name: [] for name, _, _ in builds}
    try:
        base_env = run.environments(w, stub, "ab")[0]
        for r in range(args.rounds):
            # Each round starts with the next build, so none always runs first.
            for name, binary, env in builds[r % len(builds):] + builds[:r % len(builds)]:
                got = one(args, stub, w, {**base_env, **env}, name, binary, work)
                runs[name].append(got)
                cpu, faults, rss, problem = got
                print(f"round {r + 1}, {name}: {cpu or 0:,.1f} µs a message, {faults or 0:,} page faults, "
                      f"peak {rss or 0:.1f} MiB{'  ' + problem if problem else ''}", file=sys.stderr, flush=True)
    finally:
        stub.stop()
    cap = "uncapped" if args.uncapped else f"capped at {args.memory} MB's CPU share"
    print(f"{args.workload}, {cap}, every call answered {args.delay} ms late; {args.rounds} rounds of 1 cold + "
          f"{args.warm} warm, the builds alternating\n")
    print("| build | CPU/msg: median of the rounds (each round) | page faults: median (each) | peak RSS: highest |")
    print("|---|---:|---:|---:|")
    for name, _, _ in builds:
        got = runs[name]
        cpus = [c for c, _, _, p in got if c is not None and not p]
        faults = [f for _, f, _, _ in got if f is not None]
        rss = [m for _, _, m, _ in got if m is not None]
        cpu_text = (f"{statistics.median(cpus):,.1f} µs ({', '.join(f'{c:,.1f}' for c in cpus)})"
                    if cpus else "–")
        fault_text = (f"{statistics.median(faults):,.0f} ({', '.join(f'{f:,}' for f in faults)})"
                      if faults else "–")
        print(f"| {name} | {cpu_text} | {fault_text} | {max(rss):.1f} MiB |" if rss else
              f"| {name} | {cpu_text} | {fault_text} | – |")
    problems = [(n, p) for n in runs for _, _, _, p in runs[n] if p]
    for n, p in problems:
        print(f"\n{n}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
