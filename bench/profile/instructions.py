#!/usr/bin/env python3
"""Instructions, not seconds: each function's cold start and its work per
message counted by callgrind, so that two builds (say two profiles, or two
commits) can be compared on a busy machine.

For each function and build profile it runs the function under
`valgrind --tool=callgrind` in the benchmark's runtime-API harness against the
benchmark's stub (answering at once), twice:

* the cold start: process start to its first request for an event
  (`--invocations 0`), everything the process executed in that time;
* the work: the same plus one invocation of the function's workload event;
  the difference, divided by the event's messages, is the instructions per
  message (the invocation's whole cost: parsing, packing, signing, HTTP).

callgrind counts the same for the same binary, input and environment
whatever else the machine is doing; wall time under it means nothing. The
figures say which build does less work, not how many milliseconds it takes.

    bench/profile/instructions.py --target-dir target --profiles release,release-hot

Needs the bench tools (`cargo build --profile bench-tools -p bench`) and the
functions built in each profile (`cargo build --profile P -p kinesis-to-sqs
-p apigw-to-sqs ...`), and valgrind.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
import run  # noqa: E402
import routing  # noqa: E402
import workloads  # noqa: E402

# The function and the workload whose messages it counts per message.
CASES = {
    "kinesis-to-sqs": "kinesis-10000x40B",
    "apigw-to-sqs": "apigw-1000x1KB-ndjson",
    "s3-to-sqs": "s3-100-notifications",
    "rabbitmq-to-sqs": "rabbitmq-10000",
}
# Counted unless --functions says otherwise (rabbitmq-to-sqs needs the broker
# on 127.0.0.1:5672 and fills a queue before each count).
DEFAULT = ["kinesis-to-sqs", "apigw-to-sqs", "s3-to-sqs"]


def instructions(out_file):
    """The `totals:` (or `summary:`) line of a callgrind output file: Ir."""
    with open(out_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise SystemExit(f"{out_file}: no totals line")


def counted(bench, stub, event, invocations, env, binary, work, tag, before=None):
    out = os.path.join(work, f"callgrind.{tag}.out")
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary]
    cmd = [bench, "lambda", "--event", event, "--invocations", str(invocations), "--timeout", "600",
           "--stub", stub.hostport, "--log", os.path.join(work, f"{tag}.log"), "--grace", "60"]
    if before:
        cmd += ["--before-each", before]
    for k, v in env.items():
        cmd += ["--env", f"{k}={v}"]
    r = subprocess.run(cmd + ["--"] + command, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        raise SystemExit(f"{tag}: the harness or callgrind failed: {r.stderr.strip()[-400:]}")
    report = json.loads(r.stdout)
    bad = [i for i in report["invocations"] if i["status"] != "response"]
    if report.get("init_error") or report.get("problem") or bad or report.get("cold_start_ms") is None:
        raise SystemExit(f"{tag}: the function did not answer as it should: {r.stdout[-600:]}")
    return instructions(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(run.ROOT, "target")))
    ap.add_argument("--profiles", default="release", help="comma-separated build profiles to compare")
    ap.add_argument("--tools-profile", default="bench-tools")
    ap.add_argument("--bench", default="", help="the bench tool (default: TARGET_DIR/TOOLS_PROFILE/bench)")
    ap.add_argument("--functions", default=",".join(DEFAULT),
                    help=f"comma-separated functions, of {', '.join(CASES)}")
    ap.add_argument("--workload", action="append", default=[], metavar="FN=WORKLOAD",
                    help="count FN on WORKLOAD instead of its default one (repeatable; FN may repeat)")
    ap.add_argument("--fn-env", action="append", default=[], metavar="K=V")
    ap.add_argument("--routes", action="store_true",
                    help="kinesis-to-sqs with routing rules (ROUTES): three targets on the stub, records routed by "
                         "partition key and by a JSON field, a Number attribute shaped from a field (what routing "
                         "and shaping cost per message)")
    ap.add_argument("--cold-only", action="store_true",
                    help="count the cold start alone (no invocation: seconds, not minutes)")
    ap.add_argument("--keep", default="", metavar="DIR",
                    help="keep the callgrind outputs in DIR (callgrind.FN.WORKLOAD.PROFILE.one.out holds the cold start and "
                         "one invocation) for callgrind_annotate")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed")
    bench = args.bench or os.path.join(args.target_dir, args.tools_profile, "bench")
    if not os.path.exists(bench):
        raise SystemExit(f"{bench} is missing: cargo build --profile {args.tools_profile} -p bench")
    work = tempfile.mkdtemp(prefix="instructions-")
    ws = {w["name"]: w for w in workloads.write(os.path.join(work, "events"))}
    stub = run.Stub(bench, [])
    fn_env = dict(kv.split("=", 1) for kv in args.fn_env)
    cases = [tuple(c.split("=", 1)) for c in args.workload] or [(fn, CASES[fn]) for fn in args.functions.split(",")]
    print("| function | workload | profile | binary | cold start (instructions) | per message (instructions) |")
    print("|---|---|---|---:|---:|---:|")
    try:
        for fn, workload in cases:
            w = ws[workload]
            # The workload's environment as the benchmark sets it (S3 lines
            # mode, the RabbitMQ queue and the command that fills it).
            envs = run.environments(w, stub, "instructions")
            if envs is None:
                raise SystemExit(f"{fn}: its workload needs RabbitMQ on 127.0.0.1:5672")
            env, _, before, rabbit = envs
            env.update(fn_env)
            if args.routes:
                if fn != "kinesis-to-sqs":
                    raise SystemExit("--routes: kinesis-to-sqs only (the rules read its partition key)")
                env["ROUTES"] = routing.document(stub.url)
            for profile in args.profiles.split(","):
                binary = os.path.join(args.target_dir, profile, fn)
                if not os.path.exists(binary):
                    raise SystemExit(f"{binary} is missing: cargo build --profile {profile} -p {fn}")
                tag = f"{fn}.{workload}.{profile}"
                cold = counted(bench, stub, w["event"], 0, env, binary, work, tag + ".cold")
                per = "–"
                if not args.cold_only:
                    total = counted(bench, stub, w["event"], 1, env, binary, work, tag + ".one",
                                    before.get("ours"))
                    per = f"{(total - cold) / w['messages']:,.0f}"
                size = os.path.getsize(binary)
                print(f"| {fn} | {workload} | {profile} | {size / 1048576:.2f} MiB | {cold:,} | {per} |", flush=True)
            if rabbit:
                run.delete_queue(rabbit, "bench-ours-instructions")
    finally:
        stub.stop()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        for name in os.listdir(work):
            if name.startswith("callgrind."):
                shutil.move(os.path.join(work, name), os.path.join(args.keep, name))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
