"""The init as a 128 MB Lambda function meets it: process start to ready
for the first event (its first request for one), under the CPU share Lambda
gives 128 MB (128/1,769 of one vCPU, a cgroup v1 `cpu` cap, as the billed
rows run) with the stub answering the one start-up call (`GetQueueAttributes`)
10 ms late; the median of `--init-starts` starts per function. Then the
instructions of one cold start of each function (callgrind, which counts the
same whatever else the machine does), and the targets: init ≤ 50 ms median
under the cap, ≤ 6 ms uncapped (the "Cold start" figure: no cap, answers at
once), instructions halved against kinesis-to-sqs's before the init work.

Used by bench/run.py (`measure`, `table`, `targets`); see bench/how-it-measures.md
("The figures": the init under the 128 MB cap) and bench/notes/2026-12-02-init.md.
"""

import os
import shutil
import statistics
import subprocess
import tempfile

MEMORY_MB = 128
DELAY_MS = 10
TARGETS = {"capped_ms": 50.0, "uncapped_ms": 6.0, "instructions_ratio": 0.5}
# kinesis-to-sqs's cold start before the init work, counted as `measure`
# counts it (commit f84563a, build profile `profiling`, which is `release`
# with symbols: the same code; bench/results/profile-init.md): the figure the
# "halved" target is measured against.
BEFORE = {"function": "kinesis-to-sqs", "commit": "f84563a", "instructions": 21_291_652}


def callgrind_cold(bench, stub, event, env, binary, work, tag):
    """Instructions from process start to the first request for an event
    (`bench lambda --invocations 0` running the function under callgrind),
    or None and why not."""
    out = os.path.join(work, f"callgrind.{tag}.out")
    cmd = [bench, "lambda", "--event", event, "--invocations", "0", "--timeout", "120",
           "--stub", stub.hostport, "--log", os.path.join(work, f"{tag}.log"), "--grace", "60"]
    for k, v in env.items():
        cmd += ["--env", f"{k}={v}"]
    cmd += ["--", "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        return None, f"the harness or callgrind failed: {r.stderr.strip()[-200:]}"
    with open(out, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1]), None
    return None, f"{out}: no totals line"


def measure(harness, functions, bench, stub, args, event, work):
    """Each function started `args.init_starts` times capped at 128 MB's
    share with 10 ms answers (`harness`: run.harness), and its cold start's
    instructions counted once (not in the smoke run, nor without valgrind)."""
    out = {"starts": args.init_starts, "memory_mb": MEMORY_MB, "delay_ms": DELAY_MS,
           "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()), "functions": {}}
    env = stub.env("bench-init")
    try:
        stub.call("/__reset", post=True)
        stub.delay(DELAY_MS)
        for fn in functions:
            binary = os.path.join(args.target_dir, args.profile, fn)
            samples, cpu, problem = [], [], None
            for _ in range(args.init_starts):
                r = harness(bench, stub, event, 0, env, [binary], os.path.join(work, "init.log"),
                            memory_mb=MEMORY_MB, cap=True)
                if r.get("cold_start_ms") is None:
                    problem = r.get("problem") or r.get("init_error") or r.get("exited") or "no cold start"
                    break
                samples.append(r["cold_start_ms"])
                if r.get("cold_start_cpu_ms") is not None:
                    cpu.append(r["cold_start_cpu_ms"])
            out["functions"][fn] = {
                "samples": [round(x, 2) for x in samples],
                "median": statistics.median(samples) if samples else None,
                "min": min(samples, default=None), "max": max(samples, default=None),
                "cpu_ms": statistics.median(cpu) if cpu else None,
                "problem": problem}
    finally:
        stub.delay(0)
        stub.call("/__reset", post=True)
    if args.smoke or not shutil.which("valgrind"):
        out["instructions_skipped"] = "smoke run" if args.smoke else "valgrind is not installed"
        return out
    with tempfile.TemporaryDirectory(prefix="bench-init-") as tmp:
        for fn in functions:
            count, why = callgrind_cold(bench, stub, event, env, os.path.join(args.target_dir, args.profile, fn),
                                        tmp, fn)
            out["functions"][fn]["instructions"] = count
            if why:
                out["functions"][fn]["instructions_problem"] = why
    return out


def fmt(x, digits=1):
    return "–" if x is None else f"{x:,.{digits}f}"


def table(init, colds):
    """The init section of results.md."""
    L = [f"**Init** (process start to ready for the first event; capped: in a cgroup at {MEMORY_MB} MB's CPU share, "
         f"128/1,769 of one vCPU, the stub answering `GetQueueAttributes` {DELAY_MS} ms late, "
         f"{init['starts']} starts per function, load average {init['load']} when it began; uncapped: the "
         f"\"Cold start\" figure, answers at once; instructions: one cold start under callgrind, "
         f"stub answering at once; kinesis-to-sqs's before the init work: "
         f"{BEFORE['instructions']:,} at {BEFORE['commit']})", "",
         "| function | capped median | capped min-max | capped init CPU | uncapped median | instructions |",
         "|---|---:|---:|---:|---:|---:|"]
    for fn, f in init["functions"].items():
        c = colds.get(fn, {})
        ins = f.get("instructions")
        ins = f"{ins:,}" if ins else init.get("instructions_skipped") or f.get("instructions_problem", "–")
        if f.get("problem"):
            L.append(f"| {fn} | not measured: {f['problem'][:160]} | | | {fmt(c.get('median'))} ms | {ins} |")
            continue
        L.append(f"| {fn} | {fmt(f['median'])} ms | {fmt(f['min'])}-{fmt(f['max'])} ms | {fmt(f['cpu_ms'], 2)} ms "
                 f"| {fmt(c.get('median'))} ms | {ins} |")
    return L


def targets(init, colds):
    """The init's targets, met or missed and by how much."""
    if not init:
        return ["init ≤ 50 ms median under the 128 MB cap (10 ms round trip): not measured",
                "init ≤ 6 ms median uncapped: not measured", "init instructions halved: not measured"]
    fs = init["functions"]
    capped = {fn: f["median"] for fn, f in fs.items() if f.get("median") is not None}
    out = []
    if not capped:
        why = next((f["problem"] for f in fs.values() if f.get("problem")), "no start")
        out.append(f"init ≤ 50 ms median under the 128 MB cap (10 ms round trip): not measured ({why[:160]})")
    else:
        miss = [f"{fn} {ms:.1f} ms" for fn, ms in capped.items() if ms > TARGETS["capped_ms"]]
        state = "met" if not miss else "missed on " + "; ".join(miss)
        out.append(f"init ≤ 50 ms median under the 128 MB cap (10 ms round trip): {state} "
                   f"({', '.join(f'{fn} {ms:.1f} ms' for fn, ms in capped.items())}; load average "
                   f"{init['load']}: timed figures hold only on a quiet machine)")
    unc = {fn: c["median"] for fn, c in colds.items() if fn in fs and c.get("median") is not None}
    if unc:
        miss = [f"{fn} {ms:.1f} ms" for fn, ms in unc.items() if ms > TARGETS["uncapped_ms"]]
        state = "met" if not miss else "missed on " + "; ".join(miss)
        out.append(f"init ≤ 6 ms median uncapped: {state} "
                   f"({', '.join(f'{fn} {ms:.1f} ms' for fn, ms in unc.items())})")
    else:
        out.append("init ≤ 6 ms median uncapped: not measured")
    now = fs.get(BEFORE["function"], {}).get("instructions")
    if now:
        ratio = now / BEFORE["instructions"]
        state = "met" if ratio <= TARGETS["instructions_ratio"] else "missed"
        out.append(f"init instructions halved: {state} ({BEFORE['function']} {now:,} against "
                   f"{BEFORE['instructions']:,} at {BEFORE['commit']}: {100 * (ratio - 1):+.1f}%)")
    else:
        out.append(f"init instructions halved: not measured ({init.get('instructions_skipped', 'no count')})")
    return out
