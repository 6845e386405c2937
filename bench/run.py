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
import init  # noqa: E402
import routing  # noqa: E402

REQUEST_CAP = 1_048_576
MAX_ENTRIES = 10
CHUNK = 65_536
DELAY_MS = 10  # the round trip of the Lambda-billed runs: an in-region call
MEMORIES = (128, 1769)  # the Lambda-billed runs' memory sizes (1,769 MB = one vCPU)




def in_flight_for(memory_mb):
    """MAX_IN_FLIGHT's default for a function of `memory_mb`, as
    `sqs_forwarder::config::default_max_in_flight` computes it (one per 64 MB,
    16 to 64): the floors use as many calls in flight as the function."""
    return min(64, max(16, memory_mb // 64))


IN_FLIGHT = in_flight_for(128)
FUNCTION = {"kinesis": "kinesis-to-sqs", "apigw": "apigw-to-sqs", "s3": "s3-to-sqs",
            "s3-lines": "s3-to-sqs", "rabbitmq": "rabbitmq-to-sqs"}
BASELINE = {"kinesis": "kinesis", "apigw": "apigw", "s3": "s3_notification",
            "s3-lines": "s3_lines", "rabbitmq": "rabbitmq"}
FUNCTIONS = ["kinesis-to-sqs", "s3-to-sqs", "apigw-to-sqs", "rabbitmq-to-sqs"]
TARGETS = {"cold_start_ms": 20.0, "rss_mib": 48.0, "x_boto3": 20.0, "floor_ratio": 1.5, "units_over": 0.02,
           "cpu_floor_ratio": 2.0, "billed_x_boto3": 20.0, "slow_answer_ratio": 1.5,
           "drain_sdk_floor_ratio": 1.2, "drain_billed_x_boto3": 15.0}
# The workloads whose messages are not small (the others carry 1 byte to 1 KB of data each).
LARGE_MESSAGES = {"kinesis-80x55KB", "kinesis-mixed", "apigw-25x200KB-ndjson", "s3-lines-50x100KB"}
# The workloads of the Lambda-billed runs: one per function, each with boto3; and the per-byte path's
# two Kinesis events (large records, and records of 200 bytes of JSON).
BILLED = ["kinesis-10000x40B", "apigw-1000x1KB-ndjson", "s3-100-notifications", "rabbitmq-10000",
          "kinesis-80x55KB", "kinesis-7300x200B"]
# The per-byte path's lines: CPU per message at most this many ns per byte of record data, uncapped,
# on these workloads (large records of one size each); the large records at 128 MB with 10 ms answers
# at least this many times shorter than boto3's billed duration.
PER_BYTE_NS = 1.5
PER_BYTE = ("kinesis-80x55KB", "apigw-25x200KB-ndjson", "s3-lines-50x100KB")
LARGE_BILLED_X_BOTO3 = 8.0
# The small-record workloads run again with AGGREGATE=true (the same binary, AGGREGATE_BYTES at its
# default of 64 KiB): billed units against one message per record.
AGGREGATED = ["kinesis-10000x40B", "kinesis-3000x1KB", "kinesis-kpl-600000", "apigw-1000x1KB-ndjson",
              "s3-100-notifications", "s3-lines-100000", "rabbitmq-10000"]
# The aggregation target's workloads and factor: at least 10× fewer SQS billed units.
AGGREGATE_TARGETED = ("kinesis-10000x40B", "s3-lines-100000")
AGGREGATE_UNITS_X = 10.0


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

    def env(self, queue):
        """The environment a function (or the baseline) needs to send to
        `queue` on this stub: every AWS endpoint here, test credentials."""
        return {"QUEUE_URL": f"{self.url}/123456789012/{queue}", "AWS_ENDPOINT_URL_SQS": self.url,
                "AWS_ENDPOINT_URL_S3": self.url, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

    def stats(self, detail=False):
        return json.loads(self.call("/__stats" + ("?detail=1" if detail else "")))["epochs"]

    def delay(self, ms):
        """Answer every AWS call `ms` after its request (0: at once)."""
        self.call(f"/__delay?ms={ms}", post=True)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def harness(bench, stub, event, invocations, env, command, log_path, before_each=None, name=None,
            memory_mb=128, cap=False, grace_s=0):
    cmd = [bench, "lambda", "--event", event, "--invocations", str(invocations),
           "--timeout", "300", "--stub", stub.hostport, "--log", log_path, "--memory-mb", str(memory_mb)]
    if cap:
        cmd.append("--cap-cpu")
    if grace_s:
        cmd += ["--grace", str(grace_s)]
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
    cpu = [i["cpu_ms"] for i in (inv[1:] or inv[:1]) if i.get("cpu_ms") is not None]
    if cpu:
        out["cpu_ms"] = statistics.median(cpu)
        out["cpu_all_ms"] = [round(c, 2) for c in cpu]
    out["first_cpu_ms"] = inv[0].get("cpu_ms")
    out["cold_start_cpu_ms"] = run.get("cold_start_cpu_ms")
    out["cpu_source"] = run.get("cpu_source")
    out["throttled_ms"] = run.get("throttled_ms")
    out["throttled_periods"] = run.get("throttled_periods")
    out["answer"] = inv[-1]["response_head"][:200]
    last = epochs[len(inv)] if len(epochs) > len(inv) else {}
    out["calls"] = last.get("send_calls", 0)
    out["refused"] = sum(last.get("rejected_calls", {}).values())
    out["entries"] = last.get("entries_sent", 0)
    out["entries_failed"] = sum(last.get("entries_failed", {}).values())
    out["bytes"] = last.get("bytes_sent", 0)
    out["units"] = last.get("billed_units", 0)
    out["max_call_bytes"] = last.get("max_call_bytes", 0)
    # With AGGREGATE=true some entries are aggregates: the stub reads them,
    # and the records delivered are the plain entries plus the records
    # inside the aggregates (without aggregation: the entries).
    out["aggregates"] = last.get("aggregates", 0)
    out["records"] = out["entries"] - out["aggregates"] + last.get("aggregated_records", 0)
    if last.get("aggregates_malformed") and not out["problem"]:
        out["problem"] = (f"{last['aggregates_malformed']} malformed aggregates: "
                          f"{last.get('aggregate_problem')}")
    out["msgs_per_s"] = out["records"] / (out["warm_ms"] / 1000) if out["warm_ms"] else None
    if out.get("cpu_ms") is not None and messages:
        out["cpu_us_per_msg"] = out["cpu_ms"] * 1000 / messages
    per_epoch = {(e.get("send_calls"), e.get("entries_sent")) for e in epochs[1:len(inv) + 1]}
    if len(per_epoch) > 1:
        out["note"] = f"invocations differ: {sorted(per_epoch)}"
    if out["records"] != messages and not out["problem"]:
        what = "records" if out["aggregates"] else "messages"
        out["problem"] = f"{out['records']} of {messages} {what} reached the stub"
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


def environments(w, stub, stamp):
    """The environment of ours and of the baseline for workload `w`, the
    commands that refill their RabbitMQ queues, and the broker URL (None
    unless the workload drains RabbitMQ). The RabbitMQ queues are named
    `bench-ours-<stamp>` and `bench-boto3-<stamp>`: the tests use other names."""
    source = w["source"]
    env = stub.env(f"bench-{stamp}")
    ours_env, base_env = dict(env, **FN_ENV), dict(env, BASELINE_HANDLER=BASELINE[source])
    before = {}
    rabbit = None
    if source == "s3-lines":
        ours_env.update(MODE="lines", S3_FORCE_PATH_STYLE="true")
    if source == "rabbitmq":
        rabbit = rabbit_url()
        if not rabbit:
            return None
        py = sys.executable
        for who, e in (("ours", ours_env), ("boto3", base_env)):
            q = f"bench-{who}-{stamp}"
            e.update(RABBITMQ_URL=rabbit, RABBITMQ_QUEUES=q)
            before[who] = (f"{py} {os.path.join(HERE, 'rabbitmq_fill.py')} '{rabbit}' {q} "
                           f"{w['messages']} 500")
    return ours_env, base_env, before, rabbit


def run_billed(w, args, bench, stub, stamp, work, memory, ours_only=False):
    """Workload `w` as Lambda bills it: ours and the boto3 baseline under
    Lambda's CPU share for `memory` MB (a cgroup), every AWS call answered
    DELAY_MS after its request; then both floors on the entries ours sent,
    with the same round trip. Ours again with AGGREGATE=true when `w` is
    one of the aggregation rows (`args.aggregate`). `ours_only`: no floors,
    no boto3 (`--aggregate-only`)."""
    stamp = f"{stamp}-{memory}"
    envs = environments(w, stub, stamp)
    if envs is None:
        return {"skipped": "no RabbitMQ on 127.0.0.1:5672"}
    ours_env, base_env, before, rabbit = envs
    fn = FUNCTION[w["source"]]
    binary = os.path.join(args.target_dir, args.profile, fn)
    in_flight = in_flight_for(memory)
    result = {"memory_mb": memory, "delay_ms": DELAY_MS, "in_flight": in_flight}
    try:
        # Ours with instant answers under the same cap: what the same work
        # costs when no answer is a round trip away.
        stub.call("/__reset", post=True)
        log(f"  {memory} MB, instant answers: sqs-forwarder ({fn}), 1 cold + {args.billed_warm} warm")
        run = harness(bench, stub, w["event"], 1 + args.billed_warm, ours_env, [binary],
                      os.path.join(work, f"{w['name']}.{memory}.instant.log"), before.get("ours"), fn,
                      memory_mb=memory, cap=True)
        if "cgroup" in (run.get("problem") or ""):
            return {"skipped": run["problem"]}
        result["ours_instant"] = summarize(run, stub.stats(), w["messages"])
        stub.call("/__reset", post=True)
        stub.delay(DELAY_MS)
        stub.call("/__capture?on=1", post=True)
        log(f"  {memory} MB, {DELAY_MS} ms round trips: sqs-forwarder ({fn}), 1 cold + {args.billed_warm} warm")
        run = harness(bench, stub, w["event"], 1 + args.billed_warm, ours_env, [binary],
                      os.path.join(work, f"{w['name']}.{memory}.ours.log"), before.get("ours"), fn,
                      memory_mb=memory, cap=True)
        stub.call("/__capture?on=0", post=True)
        if "cgroup" in (run.get("problem") or ""):
            return {"skipped": run["problem"]}
        ours = summarize(run, stub.stats(), w["messages"])
        result["ours"] = ours
        n_inv = len(run.get("invocations", []))
        if n_inv and not ours.get("problem") and not ours_only:
            log("  floors with the same round trips")
            result["floor"] = http_floor(args, stub, n_inv, in_flight, w["messages"], rounds=2)
            result["sdk_floor"] = sdk_floor(args, stub, n_inv, in_flight, ours_env, w["messages"], rounds=2)
        if w["name"] in args.aggregate.split(","):
            # After the floors: they post the requests captured above.
            stub.call("/__reset", post=True)
            log(f"  {memory} MB, {DELAY_MS} ms round trips: sqs-forwarder ({fn}), AGGREGATE=true, "
                f"1 cold + {args.billed_warm} warm")
            run = harness(bench, stub, w["event"], 1 + args.billed_warm, dict(ours_env, AGGREGATE="true"),
                          [binary], os.path.join(work, f"{w['name']}.{memory}.aggregated.log"),
                          before.get("ours"), fn, memory_mb=memory, cap=True)
            result["ours_aggregated"] = summarize(run, stub.stats(), w["messages"])
        if ours_only:
            return result
        stub.call("/__reset", post=True)
        log(f"  {memory} MB: boto3 baseline, 1 cold + {args.billed_warm_baseline} warm")
        run = harness(bench, stub, w["event"], 1 + args.billed_warm_baseline, base_env,
                      [sys.executable, os.path.join(HERE, "baseline", "bootstrap.py")],
                      os.path.join(work, f"{w['name']}.{memory}.boto3.log"), before.get("boto3"), "baseline",
                      memory_mb=memory, cap=True)
        result["boto3"] = summarize(run, stub.stats(), w["messages"])
    finally:
        stub.call("/__capture?on=0", post=True)
        stub.delay(0)
        stub.call("/__reset", post=True)
        if rabbit:
            for who in ("ours", "boto3"):
                delete_queue(rabbit, f"bench-{who}-{stamp}")
    return result


def run_workload(w, args, bench, stub, stamp, work, only_ours=False):
    """Ours on workload `w` (capturing its requests), then the floors, the
    least work and the boto3 baseline; `only_ours`: ours alone."""
    envs = environments(w, stub, stamp)
    if envs is None:
        return {"skipped": "no RabbitMQ on 127.0.0.1:5672"}
    ours_env, base_env, before, rabbit = envs
    source = w["source"]
    fn = FUNCTION[source]
    binary = os.path.join(args.target_dir, args.profile, fn)
    result = {}
    try:
        # 1. ours, capturing the request bodies for the floor
        stub.call("/__reset", post=True)
        stub.call("/__capture?on=1", post=True)
        warm = min(args.warm, w.get("max_warm", args.warm))
        log(f"  sqs-forwarder ({fn}): 1 cold + {warm} warm")
        run = harness(bench, stub, w["event"], 1 + warm, ours_env, [binary],
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
        if n_inv and not only_ours:
            # 2. the floor: the last invocation's request bodies, posted again
            log(f"  floor: {args.floor_rounds} rounds")
            result["floor"] = http_floor(args, stub, n_inv, IN_FLIGHT, w["messages"], w.get("floor_rounds"))
            # 2b. the least work beyond the floor: scanning the event, signing each request
            result["least"] = least_work(args, stub, n_inv, w["event"], w["messages"])
            # 3. the SDK floor: the same entries through aws-sdk-sqs, nothing else
            log(f"  SDK floor: {args.floor_rounds} rounds")
            result["sdk_floor"] = sdk_floor(args, stub, n_inv, IN_FLIGHT, ours_env, w["messages"],
                                            w.get("floor_rounds"))
        result["ours"] = ours
        if only_ours:
            stub.call("/__reset", post=True)
            return result
        if w.get("baseline") is False:
            result["boto3"] = {"skipped": w.get("baseline_note", "not run on this workload")}
            stub.call("/__reset", post=True)
            return result
        # 4. the boto3 baseline
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


def run_aggregated(w, args, bench, stub, stamp, work):
    """Ours on workload `w` again, the same binary with AGGREGATE=true
    (AGGREGATE_BYTES at its default): calls, billed units, peak RSS, CPU,
    and the records delivered as the stub counts them (the plain messages
    plus the records inside the aggregates it read), which must be the
    workload's records in every invocation."""
    stamp = f"{stamp}-agg"
    envs = environments(w, stub, stamp)
    if envs is None:
        return {"skipped": "no RabbitMQ on 127.0.0.1:5672"}
    ours_env, _, before, rabbit = envs
    ours_env["AGGREGATE"] = "true"
    fn = FUNCTION[w["source"]]
    binary = os.path.join(args.target_dir, args.profile, fn)
    warm = min(args.aggregate_warm, w.get("max_warm", args.aggregate_warm))
    log_path = os.path.join(work, f"{w['name']}.aggregated.log")
    try:
        stub.call("/__reset", post=True)
        log(f"  sqs-forwarder ({fn}), AGGREGATE=true: 1 cold + {warm} warm")
        run = harness(bench, stub, w["event"], 1 + warm, ours_env, [binary], log_path, before.get("ours"), fn)
        epochs = stub.stats()
        out = summarize(run, epochs, w["messages"])
        n_inv = len(run.get("invocations", []))
        out["records_per_invocation"] = [e.get("entries_sent", 0) - e.get("aggregates", 0)
                                         + e.get("aggregated_records", 0) for e in epochs[1:n_inv + 1]]
        if not out.get("problem") and any(n != w["messages"] for n in out["records_per_invocation"]):
            out["problem"] = (f"records delivered per invocation {out['records_per_invocation']}, "
                              f"not {w['messages']} each")
        if n_inv and not out.get("problem"):
            out["problem"] = answer_problem(w["source"], run["invocations"][-1]["response_head"])
        if not out.get("problem"):
            out["problem"] = bytes_disagree(log_path, out.get("bytes"))
        stub.call("/__reset", post=True)
    finally:
        if rabbit:
            delete_queue(rabbit, f"bench-ours-{stamp}")
    return {"ours": out}


def floor_figures(proc, messages):
    """A floor's report (HTTP or SDK) as figures: median wall time and CPU."""
    if proc.returncode != 0:
        return {"problem": proc.stderr.strip()[-300:] or f"exit {proc.returncode}"}
    f = json.loads(proc.stdout)
    out = {"ms": statistics.median(f["rounds_ms"]), "requests": f["requests"],
           "rounds_ms": [round(x, 2) for x in f["rounds_ms"]],
           "non_200": f.get("non_200", 0) + f.get("failed_calls", 0) + f.get("failed_entries", 0)}
    if f.get("rounds_cpu_ms"):
        out["cpu_ms"] = statistics.median(f["rounds_cpu_ms"])
        out["rounds_cpu_ms"] = [round(x, 2) for x in f["rounds_cpu_ms"]]
        out["cpu_us_per_msg"] = out["cpu_ms"] * 1000 / messages if messages else None
    return out


def http_floor(args, stub, epoch, in_flight, messages, rounds=None):
    bench = os.path.join(args.target_dir, args.tools_profile, "bench")
    fl = subprocess.run([bench, "floor", "--stub", stub.url, "--epoch", str(epoch),
                         "--in-flight", str(in_flight), "--rounds", str(rounds or args.floor_rounds)],
                        capture_output=True, text=True)
    return floor_figures(fl, messages)


def least_work(args, stub, epoch, event, messages):
    """What any forwarder must do beyond the HTTP floor's posting, on this
    event and these request bodies (`bench least`, bench/src/least.rs):
    the event scanned by serde_json with nothing kept, and each request
    signed (SigV4). Medians of the rounds, per message."""
    bench = os.path.join(args.target_dir, args.tools_profile, "bench")
    p = subprocess.run([bench, "least", "--stub", stub.url, "--epoch", str(epoch), "--event", event,
                        "--rounds", str(args.floor_rounds)], capture_output=True, text=True)
    if p.returncode != 0:
        return {"problem": p.stderr.strip()[-300:] or f"exit {p.returncode}"}
    f = json.loads(p.stdout)
    scan, sign = statistics.median(f["rounds_scan_cpu_ms"]), statistics.median(f["rounds_sign_cpu_ms"])
    return {"event_bytes": f["event_bytes"], "requests": f["requests"],
            "rounds_scan_cpu_ms": [round(x, 3) for x in f["rounds_scan_cpu_ms"]],
            "rounds_sign_cpu_ms": [round(x, 3) for x in f["rounds_sign_cpu_ms"]],
            "scan_cpu_us_per_msg": scan * 1000 / messages if messages else None,
            "sign_cpu_us_per_msg": sign * 1000 / messages if messages else None}


def sdk_floor(args, stub, epoch, in_flight, env, messages, rounds=None):
    """The captured entries of `epoch`, prebuilt, sent again through
    aws-sdk-sqs with the forwarders' client (bench/sdk-floor)."""
    binary = os.path.join(args.target_dir, args.profile, "bench-sdk-floor")
    fl = subprocess.run([binary, "--stub", stub.url, "--epoch", str(epoch), "--in-flight", str(in_flight),
                         "--rounds", str(rounds or args.floor_rounds)],
                        capture_output=True, text=True, env=dict(os.environ, **env))
    return floor_figures(fl, messages)


def cold_starts(bench, stub, args, event, work):
    """Each function started `args.cold_starts` times, and the boto3
    baseline too: process start to its first request for an event."""
    env = stub.env("bench-cold")
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
    sf = r.get("sdk_floor", {})
    if o.get("warm_ms") and sf.get("ms"):
        d["sdk_floor_msgs_per_s"] = n / (sf["ms"] / 1000)
        d["sdk_floor_ratio"] = o["warm_ms"] / sf["ms"]
    if o.get("cpu_us_per_msg") and f.get("cpu_us_per_msg"):
        d["cpu_floor_ratio"] = o["cpu_us_per_msg"] / f["cpu_us_per_msg"]
    if o.get("cpu_us_per_msg") and sf.get("cpu_us_per_msg"):
        d["cpu_sdk_floor_ratio"] = o["cpu_us_per_msg"] / sf["cpu_us_per_msg"]
        d["cpu_ours_beyond_sdk_us"] = o["cpu_us_per_msg"] - sf["cpu_us_per_msg"]
    lw = r.get("least", {})
    if f.get("cpu_us_per_msg") and lw.get("scan_cpu_us_per_msg") is not None:
        d["least_cpu_us_per_msg"] = f["cpu_us_per_msg"] + lw["scan_cpu_us_per_msg"] + lw["sign_cpu_us_per_msg"]
        d["least_floor_ratio"] = d["least_cpu_us_per_msg"] / f["cpu_us_per_msg"]
        # what the CPU target leaves for everything the least work leaves out
        d["least_room_us"] = TARGETS["cpu_floor_ratio"] * f["cpu_us_per_msg"] - d["least_cpu_us_per_msg"]
        if o.get("cpu_us_per_msg"):
            d["cpu_least_ratio"] = o["cpu_us_per_msg"] / d["least_cpu_us_per_msg"]
    d["small_messages"] = w["name"] not in LARGE_MESSAGES
    return d


# Published prices used for the cost table: AWS pricing pages for us-east-1
# as last known to the author (2025; not checked online: no internet here).
# Lambda: duration per GB-second (first tier) and requests; SQS: standard
# queue requests beyond the free tier (each 64 KiB chunk of a call is one
# request); EventBridge Pipes: requests after filtering (each 64 KB chunk of
# an event is one request).
PRICES = {
    "as_of": "2025, us-east-1 (AWS Lambda, Amazon SQS and Amazon EventBridge pricing pages as last known; "
             "not checked online: no internet here)",
    "lambda_gb_s": {"x86_64": 0.0000166667, "arm64": 0.0000133334},
    "lambda_request": 0.20 / 1e6,
    "sqs_request": 0.40 / 1e6,
    "pipes_request": 0.40 / 1e6,
}
FN_ENV = {}  # --fn-env
PIPES_SOURCES = {"kinesis", "rabbitmq"}  # the workloads' sources Pipes can read (Kinesis; Amazon MQ)


def billed_ms(run):
    """Lambda's billed duration of the warm invocations: each rounded up to
    the millisecond, the median taken."""
    warm = run.get("warm_all_ms") or []
    return statistics.median(math.ceil(x) for x in warm) if warm else None


def cost_per_million(w, run, memory, arch):
    """Dollars per million records forwarded by one system at `memory` MB:
    Lambda duration (billed ms × GB) and requests, and SQS requests (billed
    units); warm invocations, cold starts left out."""
    ms, n = billed_ms(run), w["messages"]
    if ms is None or not n or not run.get("units"):
        return None
    per = 1e6 / n  # invocations per million records
    duration = per * ms / 1000 * memory / 1024 * PRICES["lambda_gb_s"][arch]
    requests = per * PRICES["lambda_request"]
    sqs = per * run["units"] * PRICES["sqs_request"]
    return {"lambda": duration + requests, "sqs": sqs, "total": duration + requests + sqs}


def pipes_cost_per_million(w, run):
    """EventBridge Pipes for the same records: one Pipes request per record
    (each under 64 KB), plus the SQS requests as if Pipes packed its calls as
    well as ours (a lower bound: SQS requests are not published per Pipes
    batch)."""
    if w["source"] not in PIPES_SOURCES or not run.get("units") or not w["messages"]:
        return None
    n = w["messages"]
    pipes = 1e6 * PRICES["pipes_request"]
    sqs = 1e6 / n * run["units"] * PRICES["sqs_request"]
    return {"pipes": pipes, "sqs": sqs, "total": pipes + sqs}


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
    "kinesis-7300x200B": "Kinesis 7,300 × 200 B JSON",
    "apigw-1000x1KB-ndjson": "API Gateway, 1,000 NDJSON lines of 1 KB",
    "apigw-25x200KB-ndjson": "API Gateway, 25 NDJSON lines of 200 KB",
    "s3-100-notifications": "S3, 100-record notification", "s3-lines-100000": "S3 lines mode, 100,000 lines",
    "s3-lines-50x100KB": "S3 lines mode, 50 lines of 100 KB",
    "rabbitmq-10000": "RabbitMQ, drain 10,000 (real broker)",
}


def summary(rows):
    """The run at a glance (bench/README.md's speed table comes from it)."""
    L = ["| workload | ours msg/s | boto3 msg/s | floor msg/s | × boto3 | of the floor (time ×) "
         "| CPU/msg: ours, SDK floor, HTTP floor | CPU × HTTP floor "
         "| calls (in-order min) | billed units (bound) | peak RSS |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
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
        cpu = (f"{fmt(o.get('cpu_us_per_msg'), 1)}, {fmt(r.get('sdk_floor', {}).get('cpu_us_per_msg'), 1)}, "
               f"{fmt(r.get('floor', {}).get('cpu_us_per_msg'), 1)} µs")
        L.append(f"| {label} | {fmt(o.get('msgs_per_s'))} | {fmt(b.get('msgs_per_s'))} "
                 f"| {fmt(d.get('floor_msgs_per_s'))} | {fmt(d.get('x_boto3'), 1)}× | {floor} "
                 f"| {cpu} | {fmt(d.get('cpu_floor_ratio'), 1)}× | {calls} "
                 f"| {fmt(o.get('units'))} ({fmt(d.get('units_bound'))}) | {fmt(o.get('rss_mib'), 1)} MiB |")
    return L


def billed_rows(billed):
    """(workload, memory, result) for every Lambda-billed run that ran."""
    return [(w, m, r) for w, runs in billed for m, r in runs if "ours" in r]


def billed_run(billed, workload, memory):
    """The Lambda-billed result of `workload` at `memory` MB, if it ran."""
    return next((r for w, m, r in billed_rows(billed) if m == memory and w["name"] == workload), None)


def billed_pair(run):
    """(ours, boto3) billed milliseconds of a Lambda-billed result, when both
    were measured; else None."""
    ob, bb = billed_ms((run or {}).get("ours", {})), billed_ms((run or {}).get("boto3", {}))
    return (ob, bb) if ob and bb else None


def billed_table(billed):
    """Billed duration at each memory size, ours against boto3."""
    L = [f"| workload | memory (CPU share) | calls in flight | ours billed | ours CPU/record | boto3 billed "
         f"| boto3 CPU/record | boto3 ÷ ours | ours held back by the cap | ours peak RSS |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for w, m, r in billed_rows(billed):
        o, b = r["ours"], r.get("boto3", {})
        ob, bb = billed_ms(o), billed_ms(b)
        ratio = f"{bb / ob:.1f}×" if ob and bb else "–"
        held = (f"{fmt(o.get('throttled_ms'), 0)} ms in {fmt(o.get('throttled_periods'))} periods"
                if o.get("throttled_ms") is not None else "–")
        L.append(f"| {w['name']} | {m:,} MB ({100 * m / 1769:.1f}%) | {r.get('in_flight')} "
                 f"| {fmt(ob)} ms | {fmt(o.get('cpu_us_per_msg'), 1)} µs | {fmt(bb)} ms "
                 f"| {fmt(b.get('cpu_us_per_msg'), 1)} µs | {ratio} | {held} | {fmt(o.get('rss_mib'), 1)} MiB |")
    return L


def billed_floor_table(billed, rows):
    """CPU per record with every call answered after the round trip,
    against the same with instant answers: what a slow answer costs."""
    instant = {w["name"]: r for w, r, _ in rows}
    L = ["| workload | memory | ours CPU/record: instant answers, 10 ms answers | SDK floor: instant, 10 ms "
         "| HTTP floor: instant, 10 ms | SDK floor time, 10 ms | HTTP floor time, 10 ms |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    for w, m, r in billed_rows(billed):
        i = instant.get(w["name"], {})
        f, sf = r.get("floor", {}), r.get("sdk_floor", {})
        # Ours with instant answers under the same cap (the uncapped run's
        # figure when the capped one is missing).
        ours_instant = r.get("ours_instant") or i.get("ours", {})
        L.append(f"| {w['name']} | {m:,} MB "
                 f"| {fmt(ours_instant.get('cpu_us_per_msg'), 1)}, {fmt(r['ours'].get('cpu_us_per_msg'), 1)} µs "
                 f"| {fmt(i.get('sdk_floor', {}).get('cpu_us_per_msg'), 1)}, {fmt(sf.get('cpu_us_per_msg'), 1)} µs "
                 f"| {fmt(i.get('floor', {}).get('cpu_us_per_msg'), 1)}, {fmt(f.get('cpu_us_per_msg'), 1)} µs "
                 f"| {fmt(sf.get('ms'), 0)} ms | {fmt(f.get('ms'), 0)} ms |")
    return L


def cost_table(billed):
    """Dollars per million records forwarded, ours against the boto3 Lambda
    and EventBridge Pipes."""
    L = ["| workload | memory | arch | ours: Lambda + SQS = total | ours, AGGREGATE=true: Lambda + SQS = total "
         "| boto3 Lambda: Lambda + SQS = total | EventBridge Pipes: Pipes + SQS = total |",
         "|---|---:|---|---:|---:|---:|---:|"]
    for w, m, r in billed_rows(billed):
        for arch in ("arm64", "x86_64"):
            o = cost_per_million(w, r["ours"], m, arch)
            a = cost_per_million(w, r.get("ours_aggregated", {}), m, arch)
            b = cost_per_million(w, r.get("boto3", {}), m, arch)
            p = pipes_cost_per_million(w, r["ours"])
            L.append(f"| {w['name']} | {m:,} MB | {arch} | {money(o, 'lambda')} | {money(a, 'lambda')} "
                     f"| {money(b, 'lambda')} | {money(p, 'pipes') if p else 'not a Pipes source'} |")
    return L


def money(c, part):
    """One cost as `part + SQS = total` (dollars per million records)."""
    return f"${c[part]:.4f} + ${c['sqs']:.4f} = **${c['total']:.4f}**" if c else "–"


def aggregation_rows(rows, aggregated):
    """(workload, one message per record, aggregated) for every workload
    run both ways: ours' figures from the rows, the aggregated run's."""
    plain = {w["name"]: r.get("ours", {}) for w, r, _ in rows}
    return [(w, plain[w["name"]], r["ours"]) for w, r in aggregated
            if "ours" in r and plain.get(w["name"], {}).get("units") and r["ours"].get("units")]


def units_x(plain, agg):
    """How many times fewer billed units the aggregated run paid."""
    return plain["units"] / agg["units"]


def aggregation_table(rows, aggregated):
    """Aggregation's rows: calls, billed units, records delivered and peak
    RSS, one message per record against AGGREGATE=true."""
    L = ["| workload | records | calls: per record → aggregated | aggregates (records in them) "
         "| billed units: per record → aggregated | fewer units | records delivered (stub) "
         "| peak RSS: per record → aggregated | CPU/record: per record → aggregated |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for w, p, a in aggregation_rows(rows, aggregated):
        inside = a["records"] - (a["entries"] - a["aggregates"])
        L.append(f"| {w['name']} | {fmt(w['messages'])} | {fmt(p['calls'])} → {fmt(a['calls'])} "
                 f"| {fmt(a['aggregates'])} ({fmt(inside)}) | {fmt(p['units'])} → {fmt(a['units'])} "
                 f"| **{units_x(p, a):.1f}×** | {fmt(a['records'])} "
                 f"| {fmt(p.get('rss_mib'), 1)} → {fmt(a.get('rss_mib'), 1)} MiB "
                 f"| {fmt(p.get('cpu_us_per_msg'), 1)} → {fmt(a.get('cpu_us_per_msg'), 1)} µs |")
    for w, r in aggregated:
        if "skipped" in r:
            L.append(f"| {w['name']} | {fmt(w['messages'])} | skipped: {r['skipped']} | | | | | | |")
        elif r.get("ours", {}).get("problem"):
            L.append(f"| {w['name']} | {fmt(w['messages'])} | not measured: {r['ours']['problem'][:160]} "
                     f"| | | | | | |")
    return L


def aggregation_cost_table(rows, aggregated, billed):
    """Aggregation's cost per million records: SQS billed units and their
    dollars, one message per record against aggregated; with Lambda at
    128 MB (arm64) where the workload ran as Lambda bills it; and
    EventBridge Pipes for its sources (one message per record: Pipes does
    not aggregate)."""
    at128 = {w["name"]: r for w, m, r in billed_rows(billed) if m == 128}
    sqs = PRICES["sqs_request"]
    L = ["| workload | billed units per million records: per record → aggregated "
         "| SQS $ per million records: per record → aggregated "
         "| ours at 128 MB, arm64, Lambda + SQS: per record → aggregated "
         "| EventBridge Pipes: Pipes + SQS = total | Pipes ÷ ours aggregated |",
         "|---|---:|---:|---:|---:|---:|"]
    for w, p, a in aggregation_rows(rows, aggregated):
        per = 1e6 / w["messages"]
        b = at128.get(w["name"], {})
        lp = cost_per_million(w, b.get("ours", {}), 128, "arm64")
        la = cost_per_million(w, b.get("ours_aggregated", {}), 128, "arm64")
        both = (f"${lp['total']:.4f} → **${la['total']:.4f}**" if lp and la
                else "not run as Lambda bills it")
        pipes = pipes_cost_per_million(w, p)
        ours_total = la["total"] if la else per * a["units"] * sqs
        x_pipes = f"{pipes['total'] / ours_total:,.0f}×" if pipes else "–"
        L.append(f"| {w['name']} | {fmt(per * p['units'])} → {fmt(per * a['units'])} "
                 f"| ${per * p['units'] * sqs:.4f} → **${per * a['units'] * sqs:.4f}** | {both} "
                 f"| {money(pipes, 'pipes') if pipes else 'not a Pipes source'} | {x_pipes} |")
    return L


def aggregation_section(rows, aggregated, billed):
    """The aggregation part of the results: the two tables and what they mean."""
    if not aggregated:
        return []
    return ["**Aggregation** (ours again with `AGGREGATE=true`, `AGGREGATE_BYTES` at its default of 65,536: "
            "records bound for the same queue, group and delay packed into one message; the same binary, "
            "events and stub; records delivered = plain messages + the records inside the aggregates, read "
            "by the stub, in the last invocation (every invocation checked); peak RSS over the cold and warm "
            "invocations; CPU: median of the warm invocations, uncapped)",
            "", *aggregation_table(rows, aggregated), "",
            "**Cost per million records with aggregation** (SQS: billed units (64 KiB chunks per call) at "
            f"${PRICES['sqs_request'] * 1e6:.2f} per million; with Lambda: the runs as Lambda bills it at "
            "128 MB (CPU capped, 10 ms answers), arm64 prices; EventBridge Pipes: $0.40 per million records "
            "plus the SQS requests of one message per record, as in the cost table; \"Pipes ÷ ours\" against "
            "ours aggregated, Lambda included where measured, SQS alone otherwise)",
            "", *aggregation_cost_table(rows, aggregated, billed)]


def aggregation_targets(rows, aggregated):
    """The aggregation target, met or missed and by how much, with the
    aggregated runs' peak RSS against the 48 MB bound."""
    name = f"aggregation: ≥ {AGGREGATE_UNITS_X:g}× fewer billed units on kinesis 10000×40B and s3-lines-100000"
    found = {w["name"]: (p, a) for w, p, a in aggregation_rows(rows, aggregated)}
    if not all(n in found for n in AGGREGATE_TARGETED):
        return [f"{name}: not measured"]
    factors = [units_x(*found[n]) for n in AGGREGATE_TARGETED]
    rss = [found[n][1].get("rss_mib") for n in AGGREGATE_TARGETED]
    units_met = all(x >= AGGREGATE_UNITS_X for x in factors)
    rss_met = all(m is not None and m * 1.048576 < TARGETS["rss_mib"] for m in rss)
    bound = "under" if rss_met else "not all under"
    return [f"{name}: {'met' if units_met and rss_met else 'missed'} (measured "
            + " and ".join(f"{x:.1f}×" for x in factors)
            + "; peak RSS aggregated " + " and ".join(f"{fmt(m, 1)} MiB" for m in rss)
            + f", {bound} the {TARGETS['rss_mib']:g} MB bound)"]


def table(rows, binaries, colds, mach, args, started, billed=(), inits=None, routed=None, aggregated=()):
    L = []
    L.append(f"Run {started} on {mach['cpu']}, {mach['cores']} cores, {mach['memory']} "
             f"(Linux {mach['kernel']}; {mach['rustc']}; Python {mach['python']}, boto3 {mach['boto3']}; "
             f"load average {mach['load']} at the start, {mach.get('load_end', '?')} at the end; the run took "
             f"{mach.get('minutes', '?')} min; the benchmark's processes at nice {mach.get('nice', 0)}). "
             f"Command: `{args.command}`. Warm figures are the median of {args.warm} warm invocations "
             f"(boto3: {args.warm_baseline}); the floor is the median of {args.floor_rounds} rounds.")
    L.append("")
    L.append("**Summary** (the run at a glance; bench/README.md's speed table comes from it)")
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
    L.append("**CPU per message** (CPU time of the process, user + system, every thread; ours: the function "
             "from the event handed out to its answer, median of the warm invocations; the SDK floor: the same "
             "entries, prebuilt, sent through aws-sdk-sqs with our client settings and as many calls in flight "
             "(`bench-sdk-floor`); the HTTP floor: the same request bodies posted by a bare HTTP client. "
             "Load-independent, unlike the times)")
    L.append("")
    L.append("| workload | ours CPU/msg | SDK floor CPU/msg | HTTP floor CPU/msg | ours × HTTP floor "
             "| ours × SDK floor | ours beyond the SDK floor | SDK floor time (msg/s) | time vs SDK floor |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, r, d in rows:
        if "ours" not in r:
            continue
        o, sf, f = r["ours"], r.get("sdk_floor", {}), r.get("floor", {})
        L.append(f"| {w['name']} | {fmt(o.get('cpu_us_per_msg'), 2)} µs | {fmt(sf.get('cpu_us_per_msg'), 2)} µs "
                 f"| {fmt(f.get('cpu_us_per_msg'), 2)} µs | {fmt(d.get('cpu_floor_ratio'), 2)}× "
                 f"| {fmt(d.get('cpu_sdk_floor_ratio'), 2)}× | {fmt(d.get('cpu_ours_beyond_sdk_us'), 2)} µs "
                 f"| {fmt(sf.get('ms'), 1)} ms ({fmt(d.get('sdk_floor_msgs_per_s'))}) "
                 f"| {fmt(d.get('sdk_floor_ratio'), 2)}× |")
    L.append("")
    L.append("**The least work** (what any forwarder must do beyond the HTTP floor's posting, measured on "
             "the same event and request bodies by `bench least`: the event scanned by serde_json with nothing "
             "kept, and every request signed with SigV4, the day's key kept; CPU of one thread, median of the "
             "rounds, per message. Writing and checking the messages, packing, outcomes and allocation are "
             "not counted, so the least work is a lower bound. S3 lines and RabbitMQ read their messages from "
             "the object and the broker, which is not counted either)")
    L.append("")
    L.append("| workload | HTTP floor | + scanning the event | + signing | least work | least × HTTP floor "
             f"| ours | ours × least | {TARGETS['cpu_floor_ratio']:g}× the HTTP floor less the least work |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, r, d in rows:
        if "ours" not in r:
            continue
        f, lw = r.get("floor", {}), r.get("least", {})
        L.append(f"| {w['name']} | {fmt(f.get('cpu_us_per_msg'), 2)} µs | {fmt(lw.get('scan_cpu_us_per_msg'), 2)} µs "
                 f"| {fmt(lw.get('sign_cpu_us_per_msg'), 2)} µs | {fmt(d.get('least_cpu_us_per_msg'), 2)} µs "
                 f"| {fmt(d.get('least_floor_ratio'), 2)}× | {fmt(r['ours'].get('cpu_us_per_msg'), 2)} µs "
                 f"| {fmt(d.get('cpu_least_ratio'), 2)}× | {fmt(d.get('least_room_us'), 2)} µs |")
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
    if inits:
        L.extend(init.table(inits, colds))
        L.append("")
    if routed:
        L.extend(routing.table(routed))
        L.append("")
    L.append("**Release binaries** (stripped, LTO, opt-level s)" if args.profile == "release"
             else f"**Binaries** ({args.profile} build: sizes say nothing here)")
    L.append("")
    L.append("| function | x86_64 | arm64 |")
    L.append("|---|---:|---:|")
    for fn, s in binaries.items():
        L.append(f"| {fn} | {fmt(mib(s['x86_64']), 2)} MiB | "
                 f"{fmt(mib(s['arm64']), 2, none='not built')}{' MiB' if s['arm64'] else ''} |")
    if billed_rows(billed):
        L.append("")
        L.append(f"**As Lambda bills it** (each process in a cgroup capped at the CPU share Lambda gives its memory: "
                 f"`cpu.cfs_quota_us` = MB × 100,000 / 1,769 per 100,000 µs; every AWS call answered "
                 f"{DELAY_MS} ms after its request, an in-region round trip; billed = each warm invocation's "
                 f"duration rounded up to the millisecond, median of {args.billed_warm} warm invocations "
                 f"(boto3: {args.billed_warm_baseline}); calls in flight: `MAX_IN_FLIGHT`'s default at that memory)")
        L.append("")
        L.extend(billed_table(billed))
        L.append("")
        L.append(f"**What a slow answer costs** (CPU per record with every call answered at once, and "
                 f"{DELAY_MS} ms later; ours capped at the memory's CPU share both times; the floors run "
                 f"uncapped, their times show the round trips alone)")
        L.append("")
        L.extend(billed_floor_table(billed, rows))
        L.append("")
        L.append(f"**Cost per million records forwarded** (warm invocations, cold starts left out; Lambda: "
                 f"billed duration × memory at the GB-second price, plus $0.20 per million requests; SQS: "
                 f"billed units (64 KiB chunks) at $0.40 per million; the arm64 rows assume the x86_64 "
                 f"billed duration measured here; EventBridge Pipes: $0.40 per million requests, one per "
                 f"record under 64 KB, plus the SQS requests as if Pipes packed calls as ours does (a lower "
                 f"bound). Prices: {PRICES['as_of']}; per GB-second: x86_64 "
                 f"${PRICES['lambda_gb_s']['x86_64']}, arm64 ${PRICES['lambda_gb_s']['arm64']})")
        L.append("")
        L.extend(cost_table(billed))
    if aggregated:
        L.append("")
        L.extend(aggregation_section(rows, aggregated, billed))
    skipped = [(w["name"], m, r["skipped"]) for w, runs in billed for m, r in runs if "skipped" in r]
    if skipped:
        L.append("")
        L.append("Lambda-billed runs skipped: " + "; ".join(f"{n} at {m} MB: {why}" for n, m, why in skipped))
    problems = [(w["name"], who, r[who]["problem"]) for w, r, _ in rows
                for who in ("ours", "boto3") if r.get(who, {}).get("problem")]
    problems += [(w["name"], fl, r[fl]["problem"]) for w, r, _ in rows
                 for fl in ("floor", "sdk_floor", "least") if r.get(fl, {}).get("problem")]
    problems += [(f"{w['name']} at {m} MB", who, r[who]["problem"]) for w, m, r in billed_rows(billed)
                 for who in ("ours", "ours_aggregated", "boto3", "floor", "sdk_floor")
                 if r.get(who, {}).get("problem")]
    problems += aggregation_failures(aggregated)
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
    L.extend(f"- {t}" for t in targets(rows, colds, billed, aggregated))
    L.extend(f"- {t}" for t in init.targets(inits, colds))
    L.extend(f"- {t}" for t in routing.targets(routed))
    return "\n".join(L) + "\n"


def targets(rows, colds, billed=(), aggregated=()):
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
    rss = [(w, r) for w, r, d in done if r["ours"].get("rss_mib")]
    rss += [(dict(w, name=f"{w['name']} at {m} MB"), r) for w, m, r in billed_rows(billed)
            if r["ours"].get("rss_mib")]
    rss += [(dict(w, name=f"{w['name']} aggregated"), r) for w, r in aggregated
            if r.get("ours", {}).get("rss_mib")]
    m = [f"{w['name']} {r['ours']['rss_mib']:.1f} MiB" for w, r in rss
         if r["ours"]["rss_mib"] * 1.048576 >= TARGETS["rss_mib"]]
    out.append(verdict("peak RSS < 48 MB (45.8 MiB) on every workload", m, len(rss)))
    small = [(w, r, d) for w, r, d in done if d.get("small_messages") and d.get("cpu_floor_ratio")]
    m = [f"{w['name']} {d['cpu_floor_ratio']:.2f}×" for w, r, d in small
         if d["cpu_floor_ratio"] > TARGETS["cpu_floor_ratio"]]
    line = verdict("CPU per message ≤ 2× the HTTP floor's on the small-message workloads", m, len(small))
    least = [d["least_floor_ratio"] for w, r, d in small if d.get("least_floor_ratio")]
    if least:
        line += (f"; the least work alone (HTTP floor + scanning the event + signing) is "
                 f"{min(least):.2f}-{max(least):.2f}× the HTTP floor on them")
    gaps = [f"{w['name']} {d['cpu_sdk_floor_ratio']:.2f}× (+{d['cpu_ours_beyond_sdk_us']:.1f} µs/msg)"
            for w, r, d in done if d.get("cpu_sdk_floor_ratio")]
    out.append(line)
    out.append("gap to the SDK floor (our CPU per message as a multiple of the SDK floor's, and what our "
               "pipeline adds): " + ("; ".join(gaps) if gaps else "not measured"))
    b128 = billed_run(billed, "kinesis-10000x40B", 128)
    name = f"billed duration at 128 MB ≥ {TARGETS['billed_x_boto3']:.0f}× shorter than boto3's on the 10,000-record event"
    pair = billed_pair(b128)
    if pair:
        ob, bb = pair
        state = "met" if bb / ob >= TARGETS["billed_x_boto3"] else "missed"
        out.append(f"{name}: {state} ({ob:,.0f} ms against {bb:,.0f} ms: {bb / ob:.1f}×)")
    else:
        out.append(f"{name}: not measured")
    name = (f"CPU per record with {DELAY_MS} ms answers ≤ {TARGETS['slow_answer_ratio']}× the instant-answer figure, "
            f"both at 128 MB's cap, on the 10,000-record event")
    slow = b128["ours"].get("cpu_us_per_msg") if b128 else None
    fast = b128.get("ours_instant", {}).get("cpu_us_per_msg") if b128 else None
    if slow and fast:
        state = "met" if slow / fast <= TARGETS["slow_answer_ratio"] else "missed"
        out.append(f"{name}: {state} ({slow:.1f} against {fast:.1f} µs: {slow / fast:.2f}×)")
    else:
        out.append(f"{name}: not measured")
    out.extend(drain_targets(done, billed))
    out.extend(per_byte_targets(done, billed))
    out.extend(aggregation_targets(rows, aggregated))
    return out


def per_byte_targets(done, billed):
    """The per-byte path's lines: large records at most PER_BYTE_NS of CPU
    per byte of record data (uncapped); the mixed event below the SDK
    floor; the 80 × 55 KB event billed at 128 MB at least
    LARGE_BILLED_X_BOTO3× shorter than boto3's; the 200-byte event's billed
    ratio beside the 40-byte one's."""
    out = []
    for name in PER_BYTE:
        line = f"{name}: CPU per message ≤ {PER_BYTE_NS} ns per byte of record data (uncapped)"
        w, r, d = next(((w, r, d) for w, r, d in done if w["name"] == name), (None, None, None))
        cpu = (r or {}).get("ours", {}).get("cpu_us_per_msg")
        if not cpu or not w.get("record_bytes"):
            out.append(f"{line}: not measured")
            continue
        ns = cpu * 1000 / w["record_bytes"]
        state = "met" if ns <= PER_BYTE_NS else "missed"
        out.append(f"{line}: {state} ({ns:.2f} ns per byte, {cpu:.1f} µs per message against "
                   f"{PER_BYTE_NS * w['record_bytes'] / 1000:.1f})")
    line = "kinesis-mixed: CPU per message below the SDK floor's"
    d = next((d for w, r, d in done if w["name"] == "kinesis-mixed"), None)
    if d and d.get("cpu_sdk_floor_ratio"):
        state = "met" if d["cpu_sdk_floor_ratio"] < 1 else "missed"
        out.append(f"{line}: {state} ({d['cpu_sdk_floor_ratio']:.2f}×, "
                   f"{d['cpu_ours_beyond_sdk_us']:+.1f} µs/msg)")
    else:
        out.append(f"{line}: not measured")
    name = (f"kinesis-80x55KB billed at 128 MB with {DELAY_MS} ms answers ≥ {LARGE_BILLED_X_BOTO3:g}× shorter "
            f"than boto3's")
    b = billed_run(billed, "kinesis-80x55KB", 128)
    pair = billed_pair(b)
    if pair:
        ob, bb = pair
        state = "met" if bb / ob >= LARGE_BILLED_X_BOTO3 else "missed"
        ocpu, bcpu = b["ours"].get("cpu_us_per_msg"), b["boto3"].get("cpu_us_per_msg")
        cpu = f"; CPU per record {ocpu:.0f} against {bcpu:.0f} µs" if ocpu and bcpu else ""
        out.append(f"{name}: {state} ({ob:,.0f} ms against {bb:,.0f} ms: {bb / ob:.1f}×{cpu})")
    else:
        out.append(f"{name}: not measured")
    name = (f"kinesis-7300x200B billed at 128 MB ≥ {TARGETS['billed_x_boto3']:.0f}× shorter than boto3's "
            f"(the small-record line), beside the 10,000 × 40 B event's ratio")
    small, tiny = billed_pair(billed_run(billed, "kinesis-7300x200B", 128)), \
        billed_pair(billed_run(billed, "kinesis-10000x40B", 128))
    if small:
        ob, bb = small
        state = "met" if bb / ob >= TARGETS["billed_x_boto3"] else "missed"
        beside = f"; the 40-byte event {tiny[1] / tiny[0]:.1f}×" if tiny else ""
        out.append(f"{name}: {state} ({ob:,.0f} ms against {bb:,.0f} ms: {bb / ob:.1f}×{beside})")
    else:
        out.append(f"{name}: not measured")
    return out


def drain_targets(done, billed):
    """The RabbitMQ drain's two lines: CPU per message against the SDK floor
    (the same entries through aws-sdk-sqs), and billed at 128 MB against
    boto3 (CPU-bound under the cap, so the ratio of CPU per record, which
    the line shows)."""
    out = []
    name = f"RabbitMQ drain CPU per message ≤ {TARGETS['drain_sdk_floor_ratio']}× the SDK floor's"
    d = next((d for w, r, d in done if w["name"] == "rabbitmq-10000"), None)
    if d and d.get("cpu_sdk_floor_ratio"):
        ratio = d["cpu_sdk_floor_ratio"]
        state = "met" if ratio <= TARGETS["drain_sdk_floor_ratio"] else "missed"
        out.append(f"{name}: {state} ({ratio:.2f}×, {d['cpu_ours_beyond_sdk_us']:+.1f} µs/msg beyond it)")
    else:
        out.append(f"{name}: not measured")
    name = f"RabbitMQ drain billed at 128 MB ≥ {TARGETS['drain_billed_x_boto3']:.0f}× shorter than boto3's"
    b = billed_run(billed, "rabbitmq-10000", 128)
    pair = billed_pair(b)
    if pair:
        ob, bb = pair
        ocpu, bcpu = b["ours"].get("cpu_us_per_msg"), b["boto3"].get("cpu_us_per_msg")
        state = "met" if bb / ob >= TARGETS["drain_billed_x_boto3"] else "missed"
        cpu = f"; CPU per record {ocpu:.1f} against {bcpu:.1f} µs" if ocpu and bcpu else ""
        out.append(f"{name}: {state} ({ob:,.0f} ms against {bb:,.0f} ms: {bb / ob:.1f}×{cpu})")
    else:
        out.append(f"{name}: not measured")
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


def plot_billed(billed, path):
    """Billed duration per invocation and cost per million records, ours
    against the boto3 Lambda (and EventBridge Pipes' cost), per workload
    and memory size."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = billed_rows(billed)
    labels = [f"{w['name']}\n{m:,} MB" for w, m, _ in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 0.8 * len(rows) + 2))
    h = 0.38
    ours = [billed_ms(r["ours"]) or 0 for _, _, r in rows]
    boto = [billed_ms(r.get("boto3", {})) or 0 for _, _, r in rows]
    ys = range(len(rows))
    a1.barh([y - h / 2 for y in ys], boto, height=h, color="#999999", label="boto3 Lambda")
    a1.barh([y + h / 2 for y in ys], ours, height=h, color="#1f77b4", label="sqs-forwarder")
    a1.set_xscale("log")
    a1.set_xlabel("billed duration per invocation, ms (log scale)")
    a1.set_yticks(list(ys))
    a1.set_yticklabels(labels)
    a1.invert_yaxis()
    a1.grid(axis="x", which="both", alpha=0.3)
    a1.legend(loc="lower right")
    k = 0.27
    cost = lambda c: c["total"] if c else 0  # noqa: E731
    series = [("boto3 Lambda (arm64)", [cost(cost_per_million(w, r.get("boto3", {}), m, "arm64"))
                                         for w, m, r in rows], "#999999"),
              ("sqs-forwarder (arm64)", [cost(cost_per_million(w, r["ours"], m, "arm64")) for w, m, r in rows],
               "#1f77b4"),
              ("EventBridge Pipes", [cost(pipes_cost_per_million(w, r["ours"])) for w, m, r in rows], "#ff7f0e")]
    for i, (label, values, color) in enumerate(series):
        a2.barh([y + (i - 1) * k for y in ys], values, height=k, color=color, label=label)
    a2.set_xscale("log")
    a2.set_xlabel("$ per million records forwarded, Lambda + SQS (log scale)")
    a2.set_yticks(list(ys))
    a2.set_yticklabels([])
    a2.invert_yaxis()
    a2.grid(axis="x", which="both", alpha=0.3)
    a2.legend(loc="lower right")
    fig.suptitle(f"As Lambda bills it: CPU capped at the memory's share, {DELAY_MS} ms round trips")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def aggregation_json(rows, aggregated):
    """The aggregated runs for results.json: each with the plain run's
    counts it is compared with."""
    plain = {w["name"]: r.get("ours", {}) for w, r, _ in rows}
    keys = ("calls", "entries", "units", "bytes", "rss_mib", "cpu_us_per_msg")
    return [{"workload": w["name"], "messages": w["messages"], "result": r,
             "plain": {k: plain.get(w["name"], {}).get(k) for k in keys}} for w, r in aggregated]


def aggregation_failures(aggregated):
    """The aggregated runs that failed: a problem, or no figures."""
    out = [(w["name"], "ours aggregated", r["ours"]["problem"]) for w, r in aggregated
           if r.get("ours", {}).get("problem")]
    out += [(w["name"], "ours aggregated", "no figures") for w, r in aggregated
            if "skipped" not in r and not r.get("ours", {}).get("units")]
    return out


def aggregate_only(args):
    """`--aggregate-only`: the aggregation rows without the rest of the
    benchmark. Each workload of `--aggregate` (and `--only`): ours one
    message per record and with AGGREGATE=true, the same invocations each;
    then, for the `--billed` ones, both as Lambda bills them (ours alone).
    Writes aggregation.md and aggregation.json to `--out`."""
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    t0 = time.time()
    stamp = str(int(time.time() * 1000))
    work = os.path.join(ROOT, ".local", "bench", "smoke" if args.smoke else "full")
    log(f"writing workloads to {work}")
    wanted = [n for n in args.aggregate.split(",") if n]
    ws = [w for w in workloads.write(work, smoke=args.smoke) if w["name"] in wanted]
    if args.only:
        ws = [w for w in ws if any(w["name"].startswith(p) for p in args.only.split(","))]
    args.warm = args.aggregate_warm
    if args.command == "bench/run.sh":  # the default: say which rows ran
        args.command = "bench/run.sh --aggregate-only" + (f" --only {args.only}" if args.only else "")
    bench = os.path.join(args.target_dir, args.tools_profile, "bench")
    mach = machine()
    mach["nice"] = raise_priority()
    stub = Stub(bench, [w["object"] for w in ws if "object" in w])
    rows, aggregated, billed = [], [], []
    billed_names = [n for n in args.billed.split(",") if n]
    memories = (1769,) if args.smoke else MEMORIES
    try:
        for w in ws:
            log(f"{w['name']}: {w['messages']} messages, event {w['event_bytes']:,} bytes")
            r = run_workload(w, args, bench, stub, stamp, work, only_ours=True)
            rows.append((w, r, derive(w, r)))
            aggregated.append((w, run_aggregated(w, args, bench, stub, stamp, work)))
        for w in ws:
            if w["name"] not in billed_names or (args.smoke and w["name"] != "kinesis-10000x40B"):
                continue
            log(f"{w['name']} as Lambda bills it ({', '.join(f'{m} MB' for m in memories)}), ours alone")
            billed.append((w, [(m, run_billed(w, args, bench, stub, stamp, work, m, ours_only=True))
                               for m in memories]))
    finally:
        stub.stop()
    minutes = round((time.time() - t0) / 60, 1)
    L = [f"Run {started} on {mach['cpu']}, {mach['cores']} cores (Linux {mach['kernel']}; {mach['rustc']}; "
         f"load average {mach['load']} at the start, "
         f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end; {minutes} min; nice {mach['nice']}). "
         f"Command: `{args.command}`. Ours alone: 1 cold + {args.aggregate_warm} warm invocations each way "
         f"({args.profile} build).", ""]
    L.extend(aggregation_section(rows, aggregated, billed))
    if billed_rows(billed):
        L += ["", f"**As Lambda bills it** (CPU capped at the memory's share, {DELAY_MS} ms answers, billed = "
              f"median warm invocation rounded up to the ms; ours alone: no boto3, no floors)", ""]
        L += ["| workload | memory | billed: per record → aggregated | billed units: per record → aggregated "
              "| peak RSS: per record → aggregated |", "|---|---:|---:|---:|---:|"]
        for w, m, r in billed_rows(billed):
            o, a = r["ours"], r.get("ours_aggregated", {})
            L.append(f"| {w['name']} | {m:,} MB | {fmt(billed_ms(o))} → {fmt(billed_ms(a))} ms "
                     f"| {fmt(o.get('units'))} → {fmt(a.get('units'))} "
                     f"| {fmt(o.get('rss_mib'), 1)} → {fmt(a.get('rss_mib'), 1)} MiB |")
        L += ["", "**Cost per million records forwarded** (as in the full run's cost table; boto3 not run; "
              f"prices: {PRICES['as_of']})", ""]
        L.extend(cost_table(billed))
    L += ["", "**Targets**", ""]
    L += [f"- {t}" for t in aggregation_targets(rows, aggregated)]
    rss = [(f"{w['name']} aggregated", r["ours"]["rss_mib"]) for w, r in aggregated
           if r.get("ours", {}).get("rss_mib")]
    over = [f"{n} {m:.1f} MiB" for n, m in rss if m * 1.048576 >= TARGETS["rss_mib"]]
    L.append(f"- peak RSS < 48 MB (45.8 MiB) on every aggregated run: "
             + ("not measured" if not rss else f"missed on {len(over)} of {len(rss)}: " + "; ".join(over)
                if over else f"met on all {len(rss)} (largest {max(m for _, m in rss):.1f} MiB)"))
    text = "\n".join(L) + "\n"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "aggregation.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(args.out, "aggregation.json"), "w", encoding="utf-8") as f:
        json.dump({"started": started, "machine": mach, "minutes": minutes, "command": args.command,
                   "aggregated": aggregation_json(rows, aggregated),
                   "billed": [{"workload": w["name"], "memory_mb": m, "result": r,
                               "billed_ms": {who: billed_ms(r.get(who, {})) for who in ("ours", "ours_aggregated")}}
                              for w, runs in billed for m, r in runs],
                   "prices": PRICES}, f, indent=1)
    print(text)
    failed = [(w["name"], "ours", r["ours"]["problem"]) for w, r, _ in rows if r.get("ours", {}).get("problem")]
    failed += aggregation_failures(aggregated)
    failed += [(f"{w['name']} at {m} MB", who, r[who]["problem"]) for w, m, r in billed_rows(billed)
               for who in ("ours", "ours_aggregated") if r.get(who, {}).get("problem")]
    for f in failed:
        log("problem: %s, %s: %s" % f)
    ran = sum(1 for _, r in aggregated if "skipped" not in r)
    bad = len({f[0] for f in failed})
    print(f"bench: {ran - bad} passed, {bad} failed")
    sys.exit(1 if failed else 0)


def raise_priority():
    """The benchmark's own processes (stub, harness, functions, floors) before
    the machine's other work, when allowed (root): on a shared machine a
    stub answer due after 10 ms otherwise arrives tens of ms late. Said in
    the results (`nice`)."""
    try:
        os.nice(-10)
        return -10
    except OSError:
        return 0


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
    ap.add_argument("--init-starts", type=int, default=20,
                    help="starts per function for the init under the 128 MB cap (10 ms answers); 0 for none")
    ap.add_argument("--only", default="", help="comma-separated workload name prefixes")
    ap.add_argument("--arm64", action="store_true", help="report the arm64 sizes of target/lambda/")
    ap.add_argument("--command", default="bench/run.sh", help="the command shown in the results")
    ap.add_argument("--billed", default=",".join(BILLED),
                    help="workloads run as Lambda bills them (CPU capped at 128 and 1,769 MB, 10 ms round "
                         "trips), comma-separated names; empty for none")
    ap.add_argument("--fn-env", action="append", default=[], metavar="K=V",
                    help="an extra environment variable for our functions (shown in the results)")
    ap.add_argument("--billed-warm", type=int, default=2)
    ap.add_argument("--billed-warm-baseline", type=int, default=1)
    ap.add_argument("--aggregate", default=",".join(AGGREGATED),
                    help="workloads run again with AGGREGATE=true (and, of the --billed ones, as Lambda bills "
                         "them), comma-separated names; empty for none")
    ap.add_argument("--aggregate-warm", type=int, default=2, help="warm invocations of the aggregated runs")
    ap.add_argument("--aggregate-only", action="store_true",
                    help="only the aggregation rows: each --aggregate workload (--only applies too) one message "
                         "per record and with AGGREGATE=true, ours alone (no floors, boto3, cold starts), and "
                         "as Lambda bills it for the --billed ones; writes aggregation.md and aggregation.json "
                         "to --out, not results.md")
    args = ap.parse_args()
    FN_ENV.update(kv.split("=", 1) for kv in args.fn_env)
    if args.smoke:
        args.warm, args.warm_baseline, args.floor_rounds, args.cold_starts, args.init_starts = 1, 0, 1, 1, 1
        # The Lambda-billed path at 1,769 MB only, on the smallest Kinesis run:
        # it checks that the path works, fast (128 MB would make boto3's
        # import alone take seconds).
        args.billed_warm, args.billed_warm_baseline, args.aggregate_warm = 1, 0, 1
    if args.aggregate_only:
        return aggregate_only(args)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    t0 = time.time()
    stamp = str(int(time.time() * 1000))
    work = os.path.join(ROOT, ".local", "bench", "smoke" if args.smoke else "full")
    log(f"writing workloads to {work}")
    ws = workloads.write(work, smoke=args.smoke)
    if args.only:
        ws = [w for w in ws if any(w["name"].startswith(p) for p in args.only.split(","))]
    bench = os.path.join(args.target_dir, args.tools_profile, "bench")
    mach = machine()  # before the run: the load average says what else was running
    mach["nice"] = raise_priority()
    stub = Stub(bench, [w["object"] for w in ws if "object" in w])
    rows = []
    try:
        for w in ws:
            log(f"{w['name']}: {w['messages']} messages, event {w['event_bytes']:,} bytes")
            r = run_workload(w, args, bench, stub, stamp, work)
            rows.append((w, r, derive(w, r)))
        log(f"cold starts: each function {args.cold_starts} times")
        colds = cold_starts(bench, stub, args, ws[0]["event"], work) if ws and args.cold_starts else {}
        log(f"init under the 128 MB cap, {init.DELAY_MS} ms answers: each function {args.init_starts} times")
        inits = (init.measure(harness, FUNCTIONS, bench, stub, args, ws[0]["event"], work)
                 if ws and args.init_starts else {})
        aggregated = []
        for w in ws:
            if w["name"] in args.aggregate.split(","):
                log(f"{w['name']} with AGGREGATE=true")
                aggregated.append((w, run_aggregated(w, args, bench, stub, stamp, work)))
        routed = None
        for w in ws:
            if w["name"] == routing.WORKLOAD:
                log(f"routing: {routing.FUNCTION} without and with ROUTES (three targets), "
                    f"{1 if args.smoke else routing.ROUNDS} times each")
                routed = routing.measure(harness, summarize, w, bench, stub, args, environments(w, stub, stamp)[0],
                                         work)
        billed = []
        wanted = [n for n in args.billed.split(",") if n]
        memories = (1769,) if args.smoke else MEMORIES
        for w in ws:
            if w["name"] not in wanted or (args.smoke and w["name"] != "kinesis-10000x40B"):
                continue
            log(f"{w['name']} as Lambda bills it ({', '.join(f'{m} MB' for m in memories)})")
            billed.append((w, [(m, run_billed(w, args, bench, stub, stamp, work, m)) for m in memories]))
    finally:
        stub.stop()
    mach["load_end"] = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    mach["minutes"] = round((time.time() - t0) / 60, 1)
    binaries = sizes(args)
    text = table(rows, binaries, colds, mach, args, started, billed, inits, routed, aggregated)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"started": started, "machine": mach, "binaries": binaries, "cold_starts": colds, "init": inits,
                   "routing": routed,
                   "aggregated": aggregation_json(rows, aggregated),
                   "workloads": [{"workload": {k: v for k, v in w.items() if k not in ("event", "object")},
                                  "result": r, "derived": d} for w, r, d in rows],
                   "billed": [{"workload": w["name"], "memory_mb": m, "result": r,
                               "billed_ms": {who: billed_ms(r.get(who, {})) for who in ("ours", "boto3")},
                               "cost_per_million": {arch: {"ours": cost_per_million(w, r.get("ours", {}), m, arch),
                                                           "boto3": cost_per_million(w, r.get("boto3", {}), m, arch),
                                                           "pipes": pipes_cost_per_million(w, r.get("ours", {}))}
                                                    for arch in ("arm64", "x86_64")}}
                              for w, runs in billed for m, r in runs],
                   "prices": PRICES}, f, indent=1)
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
        if billed_rows(billed):
            plot_billed(billed, os.path.join(args.out, "lambda.png"))
    print(text)
    # The smoke checks that everything ran and every message arrived; it
    # asserts nothing about speed.
    failed = [(w["name"], who, r[who]["problem"]) for w, r, _ in rows
              for who in ("ours", "boto3") if r.get(who, {}).get("problem")]
    failed += [(w["name"], "floor", r["floor"]["problem"]) for w, r, _ in rows
               if r.get("floor", {}).get("problem") or r.get("floor", {}).get("non_200")]
    failed += [(w["name"], "least work", r["least"]["problem"]) for w, r, _ in rows
               if r.get("least", {}).get("problem")]
    failed += [(w["name"], "ours", "no figures") for w, r, _ in rows
               if "skipped" not in r and not r.get("ours", {}).get("msgs_per_s")]
    failed += [(w["name"], "sdk floor", r["sdk_floor"].get("problem") or f"{r['sdk_floor']['non_200']} failed")
               for w, r, _ in rows
               if r.get("sdk_floor", {}).get("problem") or r.get("sdk_floor", {}).get("non_200")]
    failed += [(f"{w['name']} at {m} MB", who, r[who]["problem"]) for w, m, r in billed_rows(billed)
               for who in ("ours_instant", "ours", "ours_aggregated", "boto3") if r.get(who, {}).get("problem")]
    failed += aggregation_failures(aggregated)
    # A start that failed under the cap; no cgroup to cap with (no root) is
    # not a failure, the figure is then "not measured".
    failed += [("init at 128 MB", fn, f["problem"]) for fn, f in (inits or {}).get("functions", {}).items()
               if f.get("problem") and "cgroup" not in f["problem"]]
    failed += [("routing", name, (routed or {})[name]["problem"]) for name in ("plain", "routed")
               if (routed or {}).get(name, {}).get("problem")]
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
