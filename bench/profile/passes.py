#!/usr/bin/env python3
"""The per-byte path by pass: where a function's work on one workload goes,
split into the passes a message's bytes go through (reading the event,
decoding base64, checking the text, escaping it into the request, copying,
hashing for the signature, allocating) and the rest.

Two sources, one split:

* `callgrind`: instructions, deterministic whatever the machine's load. The
  function runs under valgrind in the benchmark's harness against its stub
  (answering at once), one cold start and one invocation; the split is of
  the whole run, by source file and function as callgrind_annotate gives
  them (code inlined into another function counts where its source is).
  Under valgrind, SHA-256 runs without the CPU's SHA instructions, and
  base64-simd without AVX2 detection may take another path: the hash and
  decode rows are larger than natively.
* `perf`: CPU samples natively, the function capped at 128 MB's CPU share
  with every call answered 10 ms late (as Lambda bills it), 1 cold + N warm
  invocations; split by symbol (inlined code counts where it was inlined).

    bench/profile/passes.py --source callgrind --workload kinesis-80x55KB
    bench/profile/passes.py --source perf --workload kinesis-mixed --warm 3

It needs the bench tools (`cargo build --profile bench-tools -p bench`), the
function built with symbols (`cargo build --profile profiling -p FN`), and
valgrind or perf.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
import run  # noqa: E402
import workloads  # noqa: E402

# (pass, pattern on "file:function"), first match wins.
PASSES = [
    ("hash (SHA-256 of each request body)", re.compile(r"sha2[-/:]|sha256|Sha256|aws-lc|aws_lc|/crypto/fipsmodule")),
    ("decode (base64)", re.compile(r"base64|vsimd|b64")),
    ("escape (JSON string into the request)", re.compile(r"message/json\.rs|format_escaped_str|serialize_str|"
                                                         r"message::json::")),
    ("check (UTF-8, SQS characters)", re.compile(r"byte_scan|encode/text\.rs|is_sqs_text|from_utf8|utf8|"
                                                 r"validations\.rs|str/lossy")),
    ("parse (the event's JSON)", re.compile(r"serde_json|serde[-/:]|serde_core|event_reader|/event\.rs|"
                                            r"aws_lambda_events|deserialize")),
    ("allocate (allocator)", re.compile(r"mimalloc|/mi_|mi_[a-z_]+|malloc|realloc|calloc|\bfree\b|"
                                        r"allocator\.rs|raw_vec|__rust_alloc|__rust_dealloc|__rdl_")),
    ("copy (memcpy/memmove)", re.compile(r"memcpy|memmove|memset")),
    ("allocate: page faults (the kernel zeroing and mapping fresh pages)",
     re.compile(r"\[k\] .*(clear_page|page_fault|handle_mm|anonymous_page|folio|alloc_pages|__list_del|zone|"
                r"pte|tlb|mas_walk|vma|lru|memcg|mm_)")),
    ("copy: the kernel's socket copies", re.compile(r"\[k\] .*(_copy_from_iter|_copy_to_iter|copy_user|copy_mc)")),
    ("kernel: TCP, system calls, scheduling", re.compile(r"\[k\]|\[kernel")),
]
OTHER = "everything else (HTTP, runtime, packing, signing's HMACs, start-up)"


def bucket(name):
    for label, pattern in PASSES:
        if pattern.search(name):
            return label
    return OTHER


def split(costs):
    """{pass: cost} from {name: cost}, and the top names of 'everything else'."""
    by = collections.Counter()
    rest = collections.Counter()
    for name, cost in costs.items():
        b = bucket(name)
        by[b] += cost
        if b == OTHER:
            rest[name] += cost
    return by, rest


def callgrind_costs(out_file):
    """{file:function: instructions} from callgrind_annotate (exclusive)."""
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no", out_file],
                          capture_output=True, text=True, check=True).stdout
    costs = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*?)(\s+\[[^]]*\])?$", line)
        if m and "PROGRAM TOTALS" not in line:
            costs[m.group(2)] += int(m.group(1).replace(",", ""))
    return costs


def perf_costs(data):
    """{dso symbol: samples} from perf report (exclusive, no children)."""
    text = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "dso,sym",
                           "-F", "sample,dso,sym", "-q"], capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+(\S+)\s+(.*)$", line)
        if m:
            costs[f"{m.group(2)} {m.group(3).strip()}"] = int(m.group(1))
    return costs


def table(by, rest, unit, messages, top, per_message=None):
    """The split; `per_message(cost)` says what a cost is per message
    (default: the cost over the messages)."""
    per = per_message or (lambda c: f"{c / messages:,.0f}")
    total = sum(by.values())
    L = [f"| pass | {unit} | share | per message |", "|---|---:|---:|---:|"]
    for label in [p for p, _ in PASSES] + [OTHER]:
        if by.get(label):
            L.append(f"| {label} | {by[label]:,} | {100 * by[label] / total:.1f}% | {per(by[label])} |")
    L.append(f"| total | {total:,} | 100% | {per(total)} |")
    L.append("")
    L.append(f"The largest of everything else ({unit}):")
    L.append("")
    for name, cost in rest.most_common(top):
        L.append(f"- {cost:,} {name[:140]}")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", choices=("callgrind", "perf"), default="callgrind")
    ap.add_argument("--workload", default="kinesis-80x55KB")
    ap.add_argument("--binary", default="", help="the function (default: TARGET_DIR/profiling/FN)")
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(run.ROOT, "target")))
    ap.add_argument("--warm", type=int, default=3, help="perf: warm invocations after the cold one")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--faults", action="store_true",
                    help="perf: count page faults (each at the instruction that touched the page) instead of "
                         "sampling the CPU")
    ap.add_argument("--keep", default="", metavar="FILE", help="keep the callgrind output or perf.data here")
    ap.add_argument("--from", dest="saved", default="", metavar="FILE",
                    help="split a kept callgrind output or perf.data (--keep) instead of running; --messages gives "
                         "the messages it covers")
    ap.add_argument("--messages", type=int, default=0)
    args = ap.parse_args()
    if args.saved:
        costs = callgrind_costs(args.saved) if args.source == "callgrind" else perf_costs(args.saved)
        by, rest = split(costs)
        n = args.messages or 1
        per = (lambda c: f"{c / 1999 * 1e6 / n:,.1f} µs") if args.source == "perf" and not args.faults else None
        print(table(by, rest, "instructions" if args.source == "callgrind" else "samples", n, args.top, per))
        return
    bench = os.path.join(args.target_dir, "bench-tools", "bench")
    work = tempfile.mkdtemp(prefix="passes-")
    ws = {w["name"]: w for w in workloads.write(os.path.join(work, "events"))}
    w = ws[args.workload]
    fn = run.FUNCTION[w["source"]]
    binary = args.binary or os.path.join(args.target_dir, "profiling", fn)
    stub = run.Stub(bench, [w["object"]] if "object" in w else [])
    try:
        env, _, before, _ = run.environments(w, stub, "passes")
        out = os.path.join(work, "profile.out")
        if args.source == "callgrind":
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary]
            invocations, cap, unit = 1, False, "instructions"
        else:
            stub.delay(run.DELAY_MS)
            sampling = ["-e", "page-faults", "-c", "1"] if args.faults else ["-F", "1999"]
            command = ["perf", "record", *sampling, "-o", out, "--", binary]
            invocations, cap, unit = 1 + args.warm, True, "page faults" if args.faults else "samples"
        cmd = [bench, "lambda", "--event", w["event"], "--invocations", str(invocations), "--timeout", "600",
               "--stub", stub.hostport, "--log", os.path.join(work, "fn.log"), "--grace", "60",
               "--memory-mb", "128"] + (["--cap-cpu"] if cap else [])
        if before.get("ours"):
            cmd += ["--before-each", before["ours"]]
        for k, v in env.items():
            cmd += ["--env", f"{k}={v}"]
        r = subprocess.run(cmd + ["--"] + command, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(out):
            raise SystemExit(f"the run failed: {r.stderr.strip()[-600:]}")
        costs = callgrind_costs(out) if args.source == "callgrind" else perf_costs(out)
        messages = w["messages"] * invocations
        by, rest = split(costs)
        how = ("callgrind, one cold start and one invocation, the stub answering at once"
               if args.source == "callgrind" else
               f"perf, 128 MB's CPU share, {run.DELAY_MS} ms answers, 1 cold + {args.warm} warm invocations")
        print(f"{args.workload} ({fn}, {os.path.basename(binary)}): {how}\n")
        # perf samples at 1,999 Hz: CPU microseconds per message (page-fault counts stay counts)
        per = None
        if args.source == "perf" and not args.faults:
            per = lambda c: f"{c / 1999 * 1e6 / messages:,.1f} µs"  # noqa: E731
        print(table(by, rest, unit, messages, args.top, per))
        if args.keep:
            shutil.copy(out, args.keep)
    finally:
        stub.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
