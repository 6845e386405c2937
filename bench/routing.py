"""What routing and shaping cost per message: kinesis-to-sqs on the
10,000 x 40 B Kinesis event, without rules and with routing rules
(`ROUTES`) over three targets on the stub, records routed by partition key
and by a JSON field, and a Number attribute shaped from a field.

Two figures, each against the same function without rules:

* CPU per message (the harness's process CPU, median of the warm
  invocations), the two runs alternating `ROUNDS` times in one sitting so
  that both meet the same machine; the peak RSS of each, to show memory
  stays bounded by the window with three targets;
* instructions per message under callgrind (the full run only), which count
  the same whatever else the machine does: the figure to trust on a busy
  machine.

The target: routing and shaping within 20% of the CPU per message without
rules. Used by bench/run.py (`measure`, `table`, `targets`) and by
bench/profile/instructions.py (`document`); see bench/notes/2026-12-03-routing-cost.md.
"""

import json
import os
import shutil
import statistics
import subprocess
import tempfile

WORKLOAD = "kinesis-10000x40B"
FUNCTION = "kinesis-to-sqs"
ROUNDS = 3
TARGETS = {"cpu_ratio": 1.20}


def document(stub_url):
    """Three targets (the default and two more on the stub); the records of
    the 10,000 x 40 B workload (partition keys pk-0..pk-99, data
    {"n":i,"p":"..."}) split about 10% by partition key, 11% by a JSON
    field, the rest to the default, each with a Number attribute read from
    the data."""
    return json.dumps({
        "targets": {"a": f"{stub_url}/123456789012/bench-route-a",
                    "b": f"{stub_url}/123456789012/bench-route-b"},
        "routes": [{"when": {"key": "partition_key", "suffix": "7"}, "target": "a"},
                   {"when": {"field": "/n", "prefix": "2"}, "target": "b"}],
        "attributes": {"n": {"field": "/n", "type": "Number"}},
    }, separators=(",", ":"))


def callgrind_total(bench, stub, event, invocations, env, binary, work, tag):
    """Instructions of the process from start to the end of `invocations`
    invocations (callgrind), or None and why not."""
    out = os.path.join(work, f"callgrind.{tag}.out")
    cmd = [bench, "lambda", "--event", event, "--invocations", str(invocations), "--timeout", "600",
           "--stub", stub.hostport, "--log", os.path.join(work, f"{tag}.log"), "--grace", "60"]
    for k, v in env.items():
        cmd += ["--env", f"{k}={v}"]
    cmd += ["--", "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        return None, f"the harness or callgrind failed: {r.stderr.strip()[-200:]}"
    report = json.loads(r.stdout)
    if any(i["status"] != "response" for i in report.get("invocations", [])) or report.get("init_error"):
        return None, f"the function did not answer as it should: {r.stdout[-200:]}"
    with open(out, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1]), None
    return None, f"{out}: no totals line"


def measure(harness, summarize, w, bench, stub, args, env, work):
    """kinesis-to-sqs plain and routed, alternating `ROUNDS` times (one in
    the smoke run), 1 cold + `args.warm` warm invocations each; then, in the
    full run, the instructions per message of each. `harness`, `summarize`:
    bench/run.py's; `env`: the function's environment on the stub."""
    binary = os.path.join(args.target_dir, args.profile, FUNCTION)
    envs = {"plain": dict(env), "routed": dict(env, ROUTES=document(stub.url))}
    rounds = 1 if args.smoke else ROUNDS
    out = {"workload": w["name"], "messages": w["messages"], "rounds": rounds, "warm": args.warm,
           "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()), "runs": {k: [] for k in envs}}
    for _ in range(rounds):
        for name, e in envs.items():
            stub.call("/__reset", post=True)
            run = harness(bench, stub, w["event"], 1 + args.warm, e, [binary],
                          os.path.join(work, f"routing.{name}.log"), name=FUNCTION)
            s = summarize(run, stub.stats(), w["messages"])
            out["runs"][name].append({k: s.get(k) for k in ("problem", "cpu_us_per_msg", "rss_mib", "entries",
                                                            "calls")})
    stub.call("/__reset", post=True)
    for name, runs in out["runs"].items():
        cpu = [r["cpu_us_per_msg"] for r in runs if r["cpu_us_per_msg"] is not None and not r["problem"]]
        rss = [r["rss_mib"] for r in runs if r["rss_mib"]]
        out[name] = {"cpu_us_per_msg": statistics.median(cpu) if cpu else None,
                     "rss_mib": max(rss) if rss else None,
                     "calls": runs[-1]["calls"],
                     "problem": next((r["problem"] for r in runs if r["problem"]), None)}
    if args.smoke or not shutil.which("valgrind"):
        out["instructions_skipped"] = "smoke run" if args.smoke else "valgrind is not installed"
        return out
    with tempfile.TemporaryDirectory(prefix="bench-routing-") as tmp:
        for name, e in envs.items():
            cold, why = callgrind_total(bench, stub, w["event"], 0, e, binary, tmp, f"{name}.cold")
            total, why2 = (None, why) if why else callgrind_total(bench, stub, w["event"], 1, e, binary, tmp,
                                                                  f"{name}.one")
            stub.call("/__reset", post=True)
            if why2:
                out[name]["instructions_problem"] = why2
            else:
                out[name]["instructions_per_msg"] = (total - cold) / w["messages"]
    return out


def fmt(x, digits=1):
    return "–" if x is None else f"{x:,.{digits}f}"


def ratio(routed, plain, key):
    a, b = routed.get(key), plain.get(key)
    return a / b if a and b else None


def table(r):
    """The routing section of results.md."""
    p, q = r["plain"], r["routed"]
    L = [f"**Routing** ({FUNCTION}, {r['workload']}: without rules, and with `ROUTES` over three targets, "
         f"records routed by partition key and by a JSON field, a Number attribute shaped from a field; "
         f"the two alternating {r['rounds']} times, 1 cold + {r['warm']} warm each, load average {r['load']} "
         f"when it began; CPU: median of the warm invocations; instructions: one invocation under callgrind, "
         f"less the cold start, per message)", "",
         "| | CPU per message | instructions per message | calls | peak RSS |", "|---|---:|---:|---:|---:|"]
    for name, f in (("without rules", p), ("routed, three targets", q)):
        ins = f.get("instructions_per_msg")
        ins = f"{ins:,.0f}" if ins else r.get("instructions_skipped") or f.get("instructions_problem", "–")
        if f.get("problem"):
            L.append(f"| {name} | not measured: {f['problem'][:160]} | {ins} | | |")
            continue
        L.append(f"| {name} | {fmt(f['cpu_us_per_msg'], 2)} µs | {ins} | {fmt(f['calls'], 0)} "
                 f"| {fmt(f['rss_mib'])} MiB |")
    return L


def targets(r):
    """The routing target, met or missed and by how much."""
    name = "routing and shaping within 20% of the CPU per message without rules"
    if not r:
        return [f"{name}: not measured"]
    p, q = r["plain"], r["routed"]
    if p.get("problem") or q.get("problem"):
        return [f"{name}: not measured ({(p.get('problem') or q.get('problem'))[:160]})"]
    cpu = ratio(q, p, "cpu_us_per_msg")
    ins = ratio(q, p, "instructions_per_msg")
    # Instructions do not depend on the machine's load: they decide when counted.
    deciding = ins if ins is not None else cpu
    if deciding is None:
        return [f"{name}: not measured"]
    state = "met" if deciding <= TARGETS["cpu_ratio"] else "missed"
    parts = []
    if ins is not None:
        parts.append(f"instructions {100 * (ins - 1):+.1f}%")
    if cpu is not None:
        parts.append(f"CPU {100 * (cpu - 1):+.1f}% (load average {r['load']})")
    return [f"{name}: {state} ({'; '.join(parts)})"]
