#!/usr/bin/env python3
"""The benchmark: our forwarders against the boto3 Lambda users would
otherwise write, and against the floor. Run by bench/run.sh, which builds
and installs what this needs; see bench/README.md.

For every workload (bench/workloads.py), on one stub endpoint (`bench stub`)
and one runtime-API harness (`bench lambda`):

1. the project's function, release build: one cold invocation, then warm ones;
   the stub keeps the request bodies of the last one;
2. the floor (`bench floor`): those very request bodies posted again to the
   stub with the same calls in flight, nothing else;
3. the baseline: a Python handler with boto3 `send_message_batch` in chunks
   of 10 (bench/baseline/), same events, same stub, same harness.

Then it writes the table (markdown, CSV, JSON) and a plot to the results
folder and prints the table.
"""

import argparse
import csv
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import workloads  # noqa: E402

REQUEST_CAP = 1_048_576
MAX_ENTRIES = 10
CHUNK = 65_536
IN_FLIGHT = 4  # MAX_IN_FLIGHT's default: the floor uses as many
FUNCTION = {"kinesis": "kinesis-to-sqs", "apigw": "apigw-to-sqs", "s3": "s3-to-sqs",
            "s3-lines": "s3-to-sqs", "rabbitmq": "rabbitmq-to-sqs"}
BASELINE = {"kinesis": "kinesis", "apigw": "apigw", "s3": "s3_notification",
            "s3-lines": "s3_lines", "rabbitmq": "rabbitmq"}
FUNCTIONS = ["kinesis-to-sqs", "s3-to-sqs", "apigw-to-sqs", "rabbitmq-to-sqs"]
TARGETS = {"cold_start_ms": 20.0, "rss_mib": 40.0, "x_boto3": 20.0, "floor_ratio": 1.5, "units_over": 0.02}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Stub:
    def __init__(self, bench, objects):
        cmd = [bench, "stub", "--port", "0"]
        for o in objects:
            cmd += ["--object", o]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise SystemExit("the stub did not start")
        self.hostport = self.url[len("http://"):]

    def call(self, path, post=False):
        req = urllib.request.Request(self.url + path, data=b"" if post else None,
                                     method="POST" if post else "GET")
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.read()

    def stats(self, detail=False):
        return json.loads(self.call("/__stats" + ("?detail=1" if detail else "")))["epochs"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def harness(bench, stub, event, invocations, env, command, log_path, before_each=None, name=None):
    cmd = [bench, "lambda", "--event", event, "--invocations", str(invocations),
           "--timeout", "300", "--stub", stub.hostport, "--log", log_path]
    if before_each:
        cmd += ["--before-each", before_each]
    if name:
        cmd += ["--name", name]
    for k, v in env.items():
        cmd += ["--env", f"{k}={v}"]
    out = subprocess.run(cmd + ["--"] + command, capture_output=True, text=True)
    if out.returncode != 0:
        return {"problem": f"harness failed: {out.stderr.strip()[-300:]}", "invocations": []}
    return json.loads(out.stdout)


def input_order(calls):
    """One invocation's entry sizes in input order.

    Entry ids are the message's position in its `send_all` (the forwarder
    sets them so), so when they are unique in the invocation they give the
    input order. Functions that forward in rounds (S3 lines, RabbitMQ) reuse
    ids; there the calls are taken in arrival order, which is exact for the
    figures below when every entry is under 1/10 of the cap (as in those
    workloads): the minimum is then ceil(n/10) whatever the order.
    """
    entries = [e for call in calls for e in call]
    ids = [e[0] for e in entries]
    sizes = [e[1] for e in entries]
    if len(set(ids)) == len(ids) and all(i.isdigit() for i in ids):
        return [s for _, s in sorted(zip((int(i) for i in ids), sizes))], "by entry id"
    if sizes and max(sizes) * MAX_ENTRIES <= REQUEST_CAP:
        return sizes, "count-bound"
    return sizes, "arrival order (approximate)"


def in_order_minimum(sizes):
    """Fewest calls for these sizes in this order (greedy next-fit is optimal
    for a fixed order)."""
    n, count, used = 0, 0, 0
    for s in sizes:
        if count == 0 or count == MAX_ENTRIES or used + s > REQUEST_CAP:
            n, count, used = n + 1, 0, 0
        count += 1
        used += s
    return n


def in_order_min_units(sizes):
    """Fewest billed units for these sizes in this order: the best split into
    calls (<= 10 entries, <= 1 MiB) by billing rather than by call count
    (dynamic programming). Tells whether the unit bound is reachable at all."""
    best = [0] + [math.inf] * len(sizes)
    for i in range(1, len(sizes) + 1):
        total = 0
        for j in range(i - 1, max(-1, i - 1 - MAX_ENTRIES), -1):
            total += sizes[j]
            if total > REQUEST_CAP:
                break
            best[i] = min(best[i], best[j] + max(1, math.ceil(total / CHUNK)))
    return best[-1]


def check_packing_figures():
    """The smoke's check of the two in-order figures against brute force
    over every split of small random inputs; a wrong figure would mislead
    every table. Returns the problems found."""
    import itertools
    import random
    rng = random.Random(7)
    problems = []
    for _ in range(300):
        n = rng.randint(1, 12)
        sizes = [rng.choice([1, 40_000, 65_536, 70_000, 300_000, 524_288, 600_000]) for _ in range(n)]
        best_calls, best_units = math.inf, math.inf
        for cuts in itertools.product([False, True], repeat=n - 1):
            parts, cur = [], [sizes[0]]
            for s, cut in zip(sizes[1:], cuts):
                if cut:
                    parts.append(cur)
                    cur = []
                cur.append(s)
            parts.append(cur)
            if all(len(p) <= MAX_ENTRIES and sum(p) <= REQUEST_CAP for p in parts):
                best_calls = min(best_calls, len(parts))
                best_units = min(best_units, sum(max(1, math.ceil(sum(p) / CHUNK)) for p in parts))
        if (in_order_minimum(sizes), in_order_min_units(sizes)) != (best_calls, best_units):
            problems.append(f"{sizes}: got {in_order_minimum(sizes)}, {in_order_min_units(sizes)}; "
                            f"brute force {best_calls}, {best_units}")
    return problems


def summarize(run, epochs, messages):
    """Figures of one system on one workload, from the harness report and
    the stub's epochs (epoch i+1 is invocation i)."""
    inv = run.get("invocations", [])
    out = {"problem": run.get("problem") or run.get("init_error") or run.get("exited"),
           "cold_start_ms": run.get("cold_start_ms"),
           "rss_mib": (run.get("peak_rss_kib") or 0) / 1024 or None,
           "invocations": len(inv)}
    bad = [i for i in inv if i["status"] != "response"]
    if bad and not out["problem"]:
        out["problem"] = f"{len(bad)} invocations answered with an error: {bad[0]['response_head'][:200]}"
    if not inv:
        return out
    warm = [i["ms"] for i in inv[1:]] or [inv[0]["ms"]]
    out["first_ms"] = inv[0]["ms"]
    out["warm_ms"] = statistics.median(warm)
    out["warm_all_ms"] = [round(w, 2) for w in warm]
    out["answer"] = inv[-1]["response_head"][:200]
    last = epochs[len(inv)] if len(epochs) > len(inv) else {}
    out["calls"] = last.get("send_calls", 0)
    out["refused"] = sum(last.get("rejected_calls", {}).values())
    out["entries"] = last.get("entries_sent", 0)
    out["entries_failed"] = sum(last.get("entries_failed", {}).values())
    out["bytes"] = last.get("bytes_sent", 0)
    out["units"] = last.get("billed_units", 0)
    out["max_call_bytes"] = last.get("max_call_bytes", 0)
    out["msgs_per_s"] = out["entries"] / (out["warm_ms"] / 1000) if out["warm_ms"] else None
    per_epoch = {(e.get("send_calls"), e.get("entries_sent")) for e in epochs[1:len(inv) + 1]}
    if len(per_epoch) > 1:
        out["note"] = f"invocations differ: {sorted(per_epoch)}"
    if out["entries"] != messages and not out["problem"]:
        out["problem"] = f"{out['entries']} of {messages} messages reached the stub"
    return out


def answer_problem(source, answer):
    """What is wrong with a function's answer, if anything."""
    try:
        a = json.loads(answer)
    except ValueError:
        return None  # cut at 1,000 characters; the stub's count is checked anyway
    if source == "kinesis" and a.get("batchItemFailures"):
        return f"batchItemFailures: {len(a['batchItemFailures'])}"
    if source == "apigw" and a.get("statusCode") not in (200, 202):
        return f"HTTP {a.get('statusCode')}"
    return None


def bytes_disagree(log_path, stub_bytes):
    """The forwarder's own count of the bytes it sent in its last invocation
    (its `BytesSent` metric) against the stub's: two independent sizings of
    the same messages must agree."""
    last = None
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if '"_aws"' in line and '"BytesSent"' in line:
                    last = line
    except OSError:
        return None
    if last is None:
        return None
    try:
        counted = json.loads(last).get("BytesSent")
    except ValueError:
        return None
    if counted is not None and counted != stub_bytes:
        return f"the forwarder counted {counted} bytes sent, the stub {stub_bytes}"
    return None


def rabbit_url():
    import socket
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=1).close()
    except OSError:
        return None
    return os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")


def delete_queue(url, queue):
    try:
        import pika
        conn = pika.BlockingConnection(pika.URLParameters(url))
        conn.channel().queue_delete(queue)
        conn.close()
    except Exception as e:  # cleanup only
        log(f"could not delete RabbitMQ queue {queue}: {e}")


def run_workload(w, args, bench, stub, stamp, work):
    source = w["source"]
    queue_url = f"{stub.url}/123456789012/bench-{stamp}"
    env = {"QUEUE_URL": queue_url, "AWS_ENDPOINT_URL_SQS": stub.url, "AWS_ENDPOINT_URL_S3": stub.url,
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    ours_env, base_env = dict(env), dict(env, BASELINE_HANDLER=BASELINE[source])
    before = {}
    rabbit = None
    if source == "s3-lines":
        ours_env.update(MODE="lines", S3_FORCE_PATH_STYLE="true")
    if source == "rabbitmq":
        rabbit = rabbit_url()
        if not rabbit:
            return {"skipped": "no RabbitMQ on 127.0.0.1:5672"}
        py = sys.executable
        for who, e in (("ours", ours_env), ("boto3", base_env)):
            q = f"bench-{who}-{stamp}"
            e.update(RABBITMQ_URL=rabbit, RABBITMQ_QUEUES=q)
            before[who] = (f"{py} {os.path.join(HERE, 'rabbitmq_fill.py')} '{rabbit}' {q} "
                           f"{w['messages']} 500")
    fn = FUNCTION[source]
    binary = os.path.join(args.target_dir, args.profile, fn)
    result = {}
    try:
        # 1. ours, capturing the request bodies for the floor
        stub.call("/__reset", post=True)
        stub.call("/__capture?on=1", post=True)
        log(f"  sqs-forwarder ({fn}): 1 cold + {args.warm} warm")
        run = harness(bench, stub, w["event"], 1 + args.warm, ours_env, [binary],
                      os.path.join(work, f"{w['name']}.ours.log"), before.get("ours"), fn)
        stub.call("/__capture?on=0", post=True)
        epochs = stub.stats(detail=True)
        ours = summarize(run, epochs, w["messages"])
        if run.get("invocations") and not ours.get("problem"):
            ours["problem"] = answer_problem(source, run["invocations"][-1]["response_head"])
        if not ours.get("problem"):
            ours["problem"] = bytes_disagree(os.path.join(work, f"{w['name']}.ours.log"), ours.get("bytes"))
        n_inv = len(run.get("invocations", []))
        if n_inv:
            sizes, how = input_order(epochs[n_inv].get("calls", []))
            ours["min_calls"], ours["min_how"] = in_order_minimum(sizes), how
            ours["min_units"] = in_order_min_units(sizes)
            # 2. the floor: the last invocation's request bodies, posted again
            log(f"  floor: {args.floor_rounds} rounds")
            fl = subprocess.run([bench, "floor", "--stub", stub.url, "--epoch", str(n_inv),
                                 "--in-flight", str(IN_FLIGHT), "--rounds", str(args.floor_rounds)],
                                capture_output=True, text=True)
            if fl.returncode == 0:
                f = json.loads(fl.stdout)
                result["floor"] = {"ms": statistics.median(f["rounds_ms"]), "requests": f["requests"],
                                   "rounds_ms": [round(x, 2) for x in f["rounds_ms"]],
                                   "non_200": f["non_200"]}
            else:
                result["floor"] = {"problem": fl.stderr.strip()[-300:]}
        result["ours"] = ours
        # 3. the boto3 baseline
        stub.call("/__reset", post=True)
        log(f"  boto3 baseline: 1 cold + {args.warm_baseline} warm")
        run = harness(bench, stub, w["event"], 1 + args.warm_baseline, base_env,
                      [sys.executable, os.path.join(HERE, "baseline", "bootstrap.py")],
                      os.path.join(work, f"{w['name']}.boto3.log"), before.get("boto3"), "baseline")
        result["boto3"] = summarize(run, stub.stats(), w["messages"])
        stub.call("/__reset", post=True)
    finally:
        if rabbit:
            for who in ("ours", "boto3"):
                delete_queue(rabbit, f"bench-{who}-{stamp}")
    return result


def cold_starts(bench, stub, args, event, work):
    """Each function started `args.cold_starts` times, and the boto3
    baseline too: process start to its first request for an event."""
    env = {"QUEUE_URL": f"{stub.url}/123456789012/bench-cold", "AWS_ENDPOINT_URL_SQS": stub.url,
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    runs = [(fn, [os.path.join(args.target_dir, args.profile, fn)], env) for fn in FUNCTIONS]
    runs.append(("boto3 baseline", [sys.executable, os.path.join(HERE, "baseline", "bootstrap.py")],
                 dict(env, BASELINE_HANDLER="kinesis")))
    out = {}
    for name, command, e in runs:
        samples = []
        for _ in range(args.cold_starts):
            r = harness(bench, stub, event, 0, e, command, os.path.join(work, "cold.log"))
            if r.get("cold_start_ms") is not None:
                samples.append(r["cold_start_ms"])
        out[name] = {"samples": [round(x, 2) for x in samples],
                     "median": statistics.median(samples) if samples else None,
                     "min": min(samples, default=None), "max": max(samples, default=None)}
    return out


def derive(w, r):
    """The comparisons and the bounds."""
    o, b, f = r.get("ours", {}), r.get("boto3", {}), r.get("floor", {})
    d = {}
    n, total = o.get("entries") or 0, o.get("bytes") or 0
    if n:
        d["abs_bound"] = max(math.ceil(n / MAX_ENTRIES), math.ceil(total / REQUEST_CAP))
        d["units_bound"] = max(math.ceil(n / MAX_ENTRIES), math.ceil(total / CHUNK))
        d["units_over"] = (o["units"] - d["units_bound"]) / d["units_bound"]
        if b.get("units"):
            d["boto3_units_over"] = (b["units"] - d["units_bound"]) / d["units_bound"]
    if o.get("msgs_per_s") and b.get("msgs_per_s"):
        d["x_boto3"] = o["msgs_per_s"] / b["msgs_per_s"]
    if o.get("warm_ms") and f.get("ms"):
        d["floor_msgs_per_s"] = n / (f["ms"] / 1000)
        d["floor_ratio"] = o["warm_ms"] / f["ms"]  # our time as a multiple of the floor's
    return d


def fmt(v, digits=0, none="–"):
    if v is None:
        return none
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
            mem = f"{kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    rustc = subprocess.run(["rustc", "-V"], capture_output=True, text=True).stdout.strip()
    try:
        import boto3
        boto = boto3.__version__
    except ImportError:
        boto = "?"
    return {"cpu": model, "cores": os.cpu_count(), "memory": mem, "kernel": platform.release(),
            "rustc": rustc, "python": platform.python_version(), "boto3": boto,
            "load": ", ".join(f"{x:.1f}" for x in os.getloadavg())}


def sizes(args):
    out = {}
    for fn in FUNCTIONS:
        x86 = os.path.join(args.target_dir, args.profile, fn)
        arm = os.path.join(args.target_dir, "lambda", fn, "bootstrap")
        out[fn] = {"x86_64": os.path.getsize(x86) if os.path.exists(x86) else None,
                   "arm64": os.path.getsize(arm) if os.path.exists(arm) and args.arm64 else None}
    return out


def mib(b):
    return None if b is None else b / 1048576


LABELS = {
    "kinesis-10000x40B": "Kinesis 10,000 × 40 B", "kinesis-3000x1KB": "Kinesis 3,000 × 1 KB",
    "kinesis-80x55KB": "Kinesis 80 × 55 KB", "kinesis-mixed": "Kinesis mixed, at the byte limits",
    "apigw-1000x1KB-ndjson": "API Gateway, 1,000 NDJSON lines of 1 KB",
    "s3-100-notifications": "S3, 100-record notification", "s3-lines-100000": "S3 lines mode, 100,000 lines",
    "rabbitmq-10000": "RabbitMQ, drain 10,000 (real broker)",
}


def summary(rows):
    """The short table the project README shows."""
    L = ["| workload | ours msg/s | boto3 msg/s | floor msg/s | × boto3 | of the floor (time ×) "
         "| calls (in-order min) | billed units (bound) | peak RSS |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for w, r, d in rows:
        if "ours" not in r:
            continue
        o, b = r["ours"], r.get("boto3", {})
        label = LABELS.get(w["name"], w["name"])
        if w["source"] == "kinesis":
            label += f" ({w['event_bytes'] / 1e6:.1f} MB event)"
        calls = f"{fmt(o.get('calls'))} ({fmt(o.get('min_calls'))})"
        if b.get("refused"):
            calls += f"; boto3 {fmt(b.get('calls'))}, {b['refused']} refused"
        ratio = d.get("floor_ratio")
        floor = f"{100 / ratio:.0f}% ({ratio:.1f}×)" if ratio else "–"
        L.append(f"| {label} | {fmt(o.get('msgs_per_s'))} | {fmt(b.get('msgs_per_s'))} "
                 f"| {fmt(d.get('floor_msgs_per_s'))} | {fmt(d.get('x_boto3'), 1)}× | {floor} | {calls} "
                 f"| {fmt(o.get('units'))} ({fmt(d.get('units_bound'))}) | {fmt(o.get('rss_mib'), 1)} MiB |")
    return L


def table(rows, binaries, colds, mach, args, started):
    L = []
    L.append(f"Run {started} on {mach['cpu']}, {mach['cores']} cores, {mach['memory']} "
             f"(Linux {mach['kernel']}; {mach['rustc']}; Python {mach['python']}, boto3 {mach['boto3']}; "
             f"load average {mach['load']} at the start). "
             f"Command: `{args.command}`. Warm figures are the median of {args.warm} warm invocations "
             f"(boto3: {args.warm_baseline}); the floor is the median of {args.floor_rounds} rounds.")
    L.append("")
    L.append("**Summary** (the table the project README shows)")
    L.append("")
    L.extend(summary(rows))
    L.append("")
    L.append("**Throughput** (messages per second, warm; the floor posts the same request bodies "
             f"with {IN_FLIGHT} calls in flight and does nothing else)")
    L.append("")
    L.append("| workload | messages | event | sqs-forwarder | boto3 baseline | floor | × boto3 | of the floor | time vs floor |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, r, d in rows:
        if "skipped" in r:
            L.append(f"| {w['name']} | {fmt(w['messages'])} | | skipped: {r['skipped']} | | | | | |")
            continue
        o, b = r.get("ours", {}), r.get("boto3", {})
        L.append(f"| {w['name']} | {fmt(w['messages'])} | {w['event_bytes'] / 1e6:.2f} MB "
                 f"| {fmt(o.get('msgs_per_s'))} ({fmt(o.get('warm_ms'), 1)} ms) "
                 f"| {fmt(b.get('msgs_per_s'))} ({fmt(b.get('warm_ms'), 0)} ms) "
                 f"| {fmt(d.get('floor_msgs_per_s'))} ({fmt(r.get('floor', {}).get('ms'), 1)} ms) "
                 f"| {fmt(d.get('x_boto3'), 1)}× "
                 f"| {fmt(100 / d['floor_ratio'] if d.get('floor_ratio') else None, 0)}% "
                 f"| {fmt(d.get('floor_ratio'), 2)}× |")
    L.append("")
    L.append("**SQS calls and billing** (per invocation; in-order minimum = what an ideal in-order "
             "packer needs for these messages; bound = max(⌈entries/10⌉, ⌈bytes/1 MiB⌉); billed units = "
             "64 KiB chunks per call, bound max(⌈entries/10⌉, ⌈bytes/64 KiB⌉); fewest units in this order = "
             "the best split of these messages, in order, by billing instead of by calls)")
    L.append("")
    L.append("| workload | bytes | calls | in-order min | bound | boto3 calls (refused) | billed units | unit bound | over bound | fewest units in this order | boto3 units |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, r, d in rows:
        if "skipped" in r:
            continue
        o, b = r.get("ours", {}), r.get("boto3", {})
        L.append(f"| {w['name']} | {fmt(o.get('bytes'))} | {fmt(o.get('calls'))} | {fmt(o.get('min_calls'))} "
                 f"| {fmt(d.get('abs_bound'))} | {fmt(b.get('calls'))} ({fmt(b.get('refused'))}) "
                 f"| {fmt(o.get('units'))} | {fmt(d.get('units_bound'))} "
                 f"| {fmt(100 * d['units_over'] if 'units_over' in d else None, 1)}% "
                 f"| {fmt(o.get('min_units'))} | {fmt(b.get('units'))} |")
    L.append("")
    L.append("**Process** (cold start = process start to its first request for an event; "
             "peak RSS = VmHWM over the cold and warm invocations)")
    L.append("")
    L.append("| workload | cold start | first invocation | peak RSS | boto3 cold start | boto3 peak RSS |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for w, r, d in rows:
        if "skipped" in r:
            continue
        o, b = r.get("ours", {}), r.get("boto3", {})
        L.append(f"| {w['name']} | {fmt(o.get('cold_start_ms'), 1)} ms | {fmt(o.get('first_ms'), 1)} ms "
                 f"| {fmt(o.get('rss_mib'), 1)} MiB | {fmt(b.get('cold_start_ms'), 0)} ms | {fmt(b.get('rss_mib'), 1)} MiB |")
    L.append("")
    L.append(f"**Cold start** (process start to its first request for an event, {args.cold_starts} starts each; "
             "the init reads the configuration and calls `GetQueueAttributes`)")
    L.append("")
    L.append("| function | median | min | max |")
    L.append("|---|---:|---:|---:|")
    for name, c in colds.items():
        L.append(f"| {name} | {fmt(c['median'], 1)} ms | {fmt(c['min'], 1)} ms | {fmt(c['max'], 1)} ms |")
    L.append("")
    L.append("**Release binaries** (stripped, LTO, opt-level s)" if args.profile == "release"
             else f"**Binaries** ({args.profile} build: sizes say nothing here)")
    L.append("")
    L.append("| function | x86_64 | arm64 |")
    L.append("|---|---:|---:|")
    for fn, s in binaries.items():
        L.append(f"| {fn} | {fmt(mib(s['x86_64']), 2)} MiB | "
                 f"{fmt(mib(s['arm64']), 2, none='not built')}{' MiB' if s['arm64'] else ''} |")
    problems = [(w["name"], who, r[who]["problem"]) for w, r, _ in rows
                for who in ("ours", "boto3") if r.get(who, {}).get("problem")]
    problems += [(w["name"], "floor", r["floor"]["problem"]) for w, r, _ in rows
                 if r.get("floor", {}).get("problem")]
    if problems:
        L.append("")
        L.append("**Problems in this run**")
        L.append("")
        for name, who, p in problems:
            L.append(f"- {name}, {who}: {p}")
    notes = [(w["name"], who, r[who]["note"]) for w, r, _ in rows
             for who in ("ours", "boto3") if r.get(who, {}).get("note")]
    if notes:
        L.append("")
        L.append("**Notes** (calls and entries per invocation, as (calls, entries))")
        L.append("")
        for name, who, n in notes:
            L.append(f"- {name}, {who}: {n}")
    L.append("")
    L.append("**Targets**")
    L.append("")
    L.extend(f"- {t}" for t in targets(rows, colds))
    return "\n".join(L) + "\n"


def targets(rows, colds):
    """Each target, met or missed and by how much."""
    out = []
    done = [(w, r, d) for w, r, d in rows if "ours" in r]

    def verdict(name, misses, n):
        if not n:
            return f"{name}: not measured"
        if not misses:
            return f"{name}: met on all {n}"
        return f"{name}: missed on {len(misses)} of {n}: " + "; ".join(misses)

    m = [f"{w['name']} {r['ours'].get('calls')} vs {r['ours'].get('min_calls')}"
         for w, r, d in done if r["ours"].get("calls") != r["ours"].get("min_calls")]
    out.append(verdict("SQS calls = the in-order minimum", m, len(done)))
    m = [f"{w['name']} +{100 * d['units_over']:.1f}% ({r['ours']['units']} vs {d['units_bound']}; "
         f"the fewest any split of this order allows: {r['ours'].get('min_units')})" for w, r, d in done
         if d.get("units_over", 0) > TARGETS["units_over"]]
    out.append(verdict("billed units within 2% of their bound", m, len(done)))
    m = [f"{w['name']} {d['x_boto3']:.1f}×" for w, r, d in done
         if d.get("x_boto3") is not None and d["x_boto3"] < TARGETS["x_boto3"]]
    out.append(verdict("throughput ≥ 20× the boto3 baseline", m,
                       sum(1 for *_, d in done if d.get("x_boto3") is not None)))
    m = [f"{w['name']} {d['floor_ratio']:.2f}×" for w, r, d in done
         if d.get("floor_ratio") is not None and d["floor_ratio"] > TARGETS["floor_ratio"]]
    out.append(verdict("time within 1.5× of the floor", m,
                       sum(1 for *_, d in done if d.get("floor_ratio") is not None)))
    ours_cold = {k: v for k, v in colds.items() if k in FUNCTIONS and v["median"] is not None}
    m = [f"{k} median {v['median']:.1f} ms" for k, v in ours_cold.items() if v["median"] >= TARGETS["cold_start_ms"]]
    line = verdict("cold start < 20 ms (median of the starts)", m, len(ours_cold))
    if ours_cold:
        worst = max(v["max"] for v in ours_cold.values())
        line += f"; slowest single start {worst:.1f} ms"
    out.append(line)
    kin = [(w, r) for w, r, d in done if w["source"] == "kinesis" and r["ours"].get("rss_mib")]
    m = [f"{w['name']} {r['ours']['rss_mib']:.1f} MiB" for w, r in kin
         if r["ours"]["rss_mib"] >= TARGETS["rss_mib"]]
    out.append(verdict("peak RSS < 40 MB on the ~6 MB Kinesis events", m, len(kin)))
    return out


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [(w, r, d) for w, r, d in rows if r.get("ours", {}).get("msgs_per_s")]
    names = [w["name"] for w, _, _ in shown]
    series = [("boto3 baseline", [r.get("boto3", {}).get("msgs_per_s") or 0 for _, r, _ in shown], "#999999"),
              ("sqs-forwarder", [r["ours"]["msgs_per_s"] for _, r, _ in shown], "#1f77b4"),
              ("floor", [d.get("floor_msgs_per_s") or 0 for _, _, d in shown], "#2ca02c")]
    fig, ax = plt.subplots(figsize=(11.5, 0.75 * len(names) + 1.5))
    h = 0.27
    for k, (label, values, color) in enumerate(series):
        ys = [i + (k - 1) * h for i in range(len(names))]
        ax.barh(ys, values, height=h, label=label, color=color)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("messages per second, warm (log scale)")
    ax.set_title("sqs-forwarder vs a boto3 Lambda vs the floor (same stub, same harness)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny workloads, one invocation each, no plot")
    ap.add_argument("--profile", default="release", help="the functions' build profile")
    ap.add_argument("--tools-profile", default="bench-tools", help="the bench tools' build profile")
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--warm-baseline", type=int, default=2)
    ap.add_argument("--floor-rounds", type=int, default=5)
    ap.add_argument("--cold-starts", type=int, default=10, help="starts per function for the cold start figure")
    ap.add_argument("--only", default="", help="comma-separated workload name prefixes")
    ap.add_argument("--arm64", action="store_true", help="report the arm64 sizes of target/lambda/")
    ap.add_argument("--command", default="bench/run.sh", help="the command shown in the results")
    args = ap.parse_args()
    if args.smoke:
        args.warm, args.warm_baseline, args.floor_rounds, args.cold_starts = 1, 0, 1, 1
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    stamp = str(int(time.time() * 1000))
    work = os.path.join(ROOT, ".local", "bench", "smoke" if args.smoke else "full")
    log(f"writing workloads to {work}")
    ws = workloads.write(work, smoke=args.smoke)
    if args.only:
        ws = [w for w in ws if any(w["name"].startswith(p) for p in args.only.split(","))]
    bench = os.path.join(args.target_dir, args.tools_profile, "bench")
    mach = machine()  # before the run: the load average says what else was running
    stub = Stub(bench, [w["object"] for w in ws if "object" in w])
    rows = []
    try:
        for w in ws:
            log(f"{w['name']}: {w['messages']} messages, event {w['event_bytes']:,} bytes")
            r = run_workload(w, args, bench, stub, stamp, work)
            rows.append((w, r, derive(w, r)))
        log(f"cold starts: each function {args.cold_starts} times")
        colds = cold_starts(bench, stub, args, ws[0]["event"], work) if ws and args.cold_starts else {}
    finally:
        stub.stop()
    binaries = sizes(args)
    text = table(rows, binaries, colds, mach, args, started)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"started": started, "machine": mach, "binaries": binaries, "cold_starts": colds,
                   "workloads": [{"workload": {k: v for k, v in w.items() if k not in ("event", "object")},
                                  "result": r, "derived": d} for w, r, d in rows]}, f, indent=1)
    with open(os.path.join(args.out, "results.csv"), "w", newline="", encoding="utf-8") as f:
        cols = ["workload", "messages", "event_bytes", "ours_msgs_per_s", "ours_warm_ms", "boto3_msgs_per_s",
                "boto3_warm_ms", "floor_msgs_per_s", "floor_ms", "x_boto3", "floor_ratio", "calls",
                "min_calls", "abs_bound", "boto3_calls", "boto3_refused", "bytes", "units", "units_bound",
                "boto3_units", "cold_start_ms", "first_ms", "rss_mib", "boto3_cold_start_ms", "boto3_rss_mib"]
        wr = csv.writer(f)
        wr.writerow(cols)
        for w, r, d in rows:
            o, b, fl = r.get("ours", {}), r.get("boto3", {}), r.get("floor", {})
            wr.writerow([w["name"], w["messages"], w["event_bytes"], o.get("msgs_per_s"), o.get("warm_ms"),
                         b.get("msgs_per_s"), b.get("warm_ms"), d.get("floor_msgs_per_s"), fl.get("ms"),
                         d.get("x_boto3"), d.get("floor_ratio"), o.get("calls"), o.get("min_calls"),
                         d.get("abs_bound"), b.get("calls"), b.get("refused"), o.get("bytes"), o.get("units"),
                         d.get("units_bound"), b.get("units"), o.get("cold_start_ms"), o.get("first_ms"),
                         o.get("rss_mib"), b.get("cold_start_ms"), b.get("rss_mib")])
    if not args.smoke:
        plot(rows, os.path.join(args.out, "throughput.png"))
    print(text)
    # The smoke checks that everything ran and every message arrived; it
    # asserts nothing about speed.
    failed = [(w["name"], who, r[who]["problem"]) for w, r, _ in rows
              for who in ("ours", "boto3") if r.get(who, {}).get("problem")]
    failed += [(w["name"], "floor", r["floor"]["problem"]) for w, r, _ in rows
               if r.get("floor", {}).get("problem") or r.get("floor", {}).get("non_200")]
    failed += [(w["name"], "ours", "no figures") for w, r, _ in rows
               if "skipped" not in r and not r.get("ours", {}).get("msgs_per_s")]
    if failed:
        for f in failed:
            log("problem: %s, %s: %s" % f)
    ran = sum(1 for _, r, _ in rows if "skipped" not in r)
    bad = len({f[0] for f in failed})
    if args.smoke:
        problems = check_packing_figures()
        for p in problems[:5]:
            log(f"problem: in-order figures: {p}")
        ran, bad = ran + 1, bad + (1 if problems else 0)
        failed += problems
    print(f"bench: {ran - bad} passed, {bad} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
