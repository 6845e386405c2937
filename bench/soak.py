#!/usr/bin/env python3
"""The fault-injection soak: every function, over many invocations, against
`bench stub --store` injecting faults into `SendMessageBatch`, each event
source replayed as it replays; then the queue is compared with the input.
Run by bench/soak.sh (which builds and installs what this needs); see
bench/soak.md.

Per function and target queue (standard, FIFO) it prints: records in,
invocations, replays, function errors, faults injected by kind, messages
stored, distinct inputs found, lost, duplicates (standard), duplicates
(FIFO, must be 0), reported permanent (explicitly reported failed to the
source and not in the queue), then `soak: N passed, N failed`.

A run passes when nothing is lost (every input record is in the queue or
was explicitly reported failed), a FIFO queue holds no duplicate, every
stored message is one of the inputs, and SQS refused no entry for its
content; with `--no-sender-faults` also when nothing was reported failed
(every input record is in the queue).
"""

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import workloads  # noqa: E402

FUNCTIONS = {"kinesis": "kinesis-to-sqs", "s3": "s3-to-sqs", "apigw": "apigw-to-sqs",
             "rabbitmq": "rabbitmq-to-sqs"}
FAULT_KINDS = ["entry-retryable", "entry-sender", "throttle", "server-error", "latency",
               "drop-before", "drop-after"]
BUCKET = "soak-bucket"
SEQ_BASE = workloads.SEQ_BASE


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- plumbing

class Stub:
    """`bench stub --store` with the fault injector."""

    def __init__(self, bench, args):
        cmd = [bench, "stub", "--port", "0", "--store", "--fault-rate", str(args.fault_rate),
               "--latency-ms", str(args.latency_ms), "--seed", str(args.seed)]
        if args.fault_weights:
            cmd += ["--fault-weights", args.fault_weights]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise SystemExit("soak: the stub did not start")

    def call(self, path, data=None):
        req = urllib.request.Request(self.url + path, data=data,
                                     method="POST" if data is not None else "GET")
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.read()

    def queues(self):
        return json.loads(self.call("/__queues"))

    def messages(self, queue):
        raw = self.call(f"/__messages?queue={queue}")
        return [json.loads(line) for line in raw.splitlines() if line.strip()]

    def put_object(self, key, data):
        self.call(f"/__object?key={key}", data)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Function:
    """A function binary under `bench lambda --interactive`: one event in,
    one answer out; a crashed or timed-out process is replaced (cold)."""

    def __init__(self, bench, binary, name, env, timeout, log_path):
        cmd = [bench, "lambda", "--interactive", "--timeout", str(timeout), "--log", log_path,
               "--name", name]
        for k, v in env.items():
            cmd += ["--env", f"{k}={v}"]
        self.proc = subprocess.Popen(cmd + ["--", binary], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.invocations = 0
        self.errors = 0  # answers that are not a response: error, timeout, crash
        self.ms = 0.0

    def invoke(self, event):
        self.proc.stdin.write(json.dumps(event, separators=(",", ":")) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("soak: the harness ended")
        a = json.loads(line)
        self.invocations += 1
        self.ms += a.get("ms", 0.0)
        if a["status"] != "response":
            self.errors += 1
        return a

    def close(self):
        self.proc.stdin.close()
        tail = self.proc.stdout.read()
        self.proc.wait(timeout=30)
        done = [json.loads(x) for x in tail.splitlines() if x.strip()]
        return done[-1] if done else {}


def record_id(tag, n):
    return f"{tag}-{n:07d}"


def body_sid(body):
    """The input record a stored body carries (`"sid":"..."`), or None."""
    i = body.find('"sid":"')
    if i < 0:
        return None
    j = body.find('"', i + 7)
    return body[i + 7:j] if j > 0 else None


def payload(sid, n, size):
    head = '{"sid":"%s","n":%d,"p":"' % (sid, n)
    fill = max(0, size - len(head) - 2)
    return head + ("abcdefghijklmnopqrstuvwxyz0123456789" * (fill // 36 + 1))[:fill] + '"}'


class Run:
    """One function on one queue: the input, what the source saw, the figures."""

    def __init__(self, source, kind, queue):
        self.source, self.kind, self.queue = source, kind, queue
        self.inputs = []          # sids in input order
        self.group_of = {}        # sid -> FIFO group (for the order check)
        self.replays = 0          # redeliveries, retries and resends
        self.replayed_records = 0  # records handed to the function again
        self.reported = set()     # explicitly reported failed, given up by the source
        self.notes = []
        self.fn = None
        self.seconds = 0.0


# ---------------------------------------------------------------- sources

def run_kinesis(run, fn, args, rng):
    """Kinesis with ReportBatchItemFailures: a batch from the checkpoint;
    the answer's lowest sequence number is the next checkpoint (that record
    and every later one of the batch are delivered again). A record that is
    the checkpoint of more than MaximumRetryAttempts (10, the template's
    default) failed deliveries in a row is given up: on-failure destination,
    counted as reported."""
    n = args.records
    tag = "k" + run.kind[0]
    for i in range(n):
        sid = record_id(tag, i)
        run.inputs.append(sid)
        run.group_of[sid] = f"pk-{i % 50}"
    pos, stuck_at, stuck = 0, None, 0
    while pos < n:
        size = rng.randint(args.kinesis_batch // 2, args.kinesis_batch)
        items = [(payload(run.inputs[i], i, rng.randint(60, 400)), f"pk-{i % 50}")
                 for i in range(pos, min(n, pos + size))]
        event = {"Records": [workloads.kinesis_record(pos + k, d, pk) for k, (d, pk) in enumerate(items)]}
        a = fn.invoke(event)
        if a["status"] == "response":
            failures = json.loads(a["body"] or "{}").get("batchItemFailures") or []
            if not failures:
                pos += len(items)
                stuck_at, stuck = None, 0
                continue
            lowest = min(int(f["itemIdentifier"]) for f in failures) - SEQ_BASE
            if not pos <= lowest < pos + len(items):
                run.notes.append(f"answer names a record outside the batch: {lowest}")
                lowest = pos
        else:
            lowest = pos  # a function error: Lambda retries the whole batch
        run.replays += 1
        run.replayed_records += pos + len(items) - lowest
        stuck = stuck + 1 if stuck_at == lowest else 1
        stuck_at = lowest
        pos = lowest
        if stuck > args.max_retries:
            run.reported.add(run.inputs[lowest])  # given up: on-failure destination
            pos, stuck_at, stuck = lowest + 1, None, 0


def run_s3(run, fn, args, rng, stub):
    """S3 lines mode: one object per event (an async invocation). A failed
    invocation is retried (Lambda retries async events twice; the soak keeps
    retrying, counting each retry) up to --s3-max-attempts; an event that
    fails that often goes to the on-failure destination and its records that
    are not in the queue count as reported."""
    per_object = args.s3_lines
    n_objects = max(1, args.records // per_object)
    tag = "s" + run.kind[0]
    k = 0
    for o in range(n_objects):
        key = f"{run.queue}/obj-{o:05d}.ndjson"
        lines, sids = [], []
        for _ in range(per_object):
            sid = record_id(tag, k)
            sids.append(sid)
            lines.append(payload(sid, k, rng.randint(60, 300)) + "\n")
            run.group_of[sid] = f"{BUCKET}/{key}"
            k += 1
        run.inputs.extend(sids)
        data = "".join(lines).encode()
        stub.put_object(f"{BUCKET}/{key}", data)
        rec = workloads.s3_record(o, BUCKET, key, len(data))
        rec["s3"]["object"]["sequencer"] = "%018X" % (0x6749B1C0FFEE0000 + o + (1 << 40) * (run.kind == "fifo"))
        event = {"Records": [rec]}
        for attempt in range(1, args.s3_max_attempts + 1):
            a = fn.invoke(event)
            if a["status"] == "response":
                break
            run.replays += 1
            run.replayed_records += per_object
        else:
            run.notes.append(f"{key}: failed {args.s3_max_attempts} times, sent to the on-failure destination")
            run.reported.update(sids)


def apigw_request(lines, headers):
    ev = workloads.apigw_event(lines)
    ev["headers"].update(headers)
    return ev


def run_apigw(run, fn, args, rng):
    """HTTP clients. Standard queue: resend only the items the answer
    reports failed with `retryable: true` (202/207/429/503 results; a
    function error, as API Gateway's 502, means resend them all); items
    failed with `retryable: false` are given up, counted as reported. FIFO
    queue: as the README says, resend the same request with the same
    Idempotency-Key while any item failed retryable (the deduplication ids
    are `<key>-<index>`); items failed for good in the last answer are
    reported."""
    per_request = args.apigw_lines
    n_requests = max(1, args.records // per_request)
    tag = "a" + run.kind[0]
    fifo = run.kind == "fifo"
    k = 0
    for r in range(n_requests):
        sids = [record_id(tag, k + j) for j in range(per_request)]
        lines = {sid: payload(sid, k + j, rng.randint(60, 400)) + "\n" for j, sid in enumerate(sids)}
        k += per_request
        run.inputs.extend(sids)
        headers = {}
        if fifo:
            group = f"client-{r % 20}"
            headers = {"x-message-group-id": group, "idempotency-key": f"{run.queue}-req-{r}"}
            for sid in sids:
                run.group_of[sid] = group
        pending = list(sids)
        first = True
        while pending:
            if not first:
                run.replays += 1
                run.replayed_records += len(pending)
            first = False
            a = fn.invoke(apigw_request([lines[s] for s in pending], headers))
            if a["status"] != "response":
                continue  # API Gateway answers 502/504: the client resends
            resp = json.loads(a["body"])
            status = resp.get("statusCode")
            body = resp.get("body") or ""
            if resp.get("isBase64Encoded"):
                body = base64.b64decode(body).decode()
            doc = json.loads(body) if body else {}
            if status == 202:
                pending = []
                break
            results = doc.get("results")
            if results is None:
                if status in (429, 503):
                    continue
                run.notes.append(f"request {r}: {status} {body[:200]}")
                run.reported.update(pending)
                break
            retry, final_failed = [], []
            for res in results:
                sid = pending[res["index"]]
                if res["status"] == "failed":
                    (retry if res["error"].get("retryable") else final_failed).append(sid)
            if not retry:
                run.reported.update(final_failed)
                break
            if not fifo:
                run.reported.update(final_failed)
                pending = retry
            # FIFO: the same request again, same key, same indexes.


def run_rabbitmq(run, fn, args, rng):
    """RabbitMQ, polled on a schedule: publish in chunks, one drain (one
    invocation) after each, then drains until the queue is empty. What the
    function does not ack is requeued by the broker and delivered again on
    a later drain; what it rejects goes to the queue's dead-letter queue,
    read at the end and counted as reported."""
    import pika
    q = run.queue_rabbit
    dlq = q + "-dlq"
    conn = pika.BlockingConnection(pika.URLParameters(args.rabbitmq_url))
    ch = conn.channel()
    for name in (q, dlq):
        try:
            ch.queue_delete(name)
        except Exception:  # noqa: BLE001
            ch = conn.channel()
    ch.queue_declare(dlq, durable=False)
    ch.queue_declare(q, durable=False, arguments={"x-dead-letter-exchange": "",
                                                   "x-dead-letter-routing-key": dlq})
    tag = "r" + run.kind[0]
    n = args.records
    chunk = args.rabbitmq_chunk
    received = requeued = rejected = 0
    requeuing_drains = 0

    def drain():
        nonlocal received, requeued, rejected, requeuing_drains
        a = fn.invoke({"version": "0", "id": "soak", "detail-type": "Scheduled Event",
                       "source": "aws.events", "account": "123456789012",
                       "time": "2026-11-29T10:15:00Z", "region": "us-east-1",
                       "resources": [], "detail": {}})
        if a["status"] == "response":
            queues = json.loads(a["body"]).get("queues", [])
            if any(qr.get("requeued") for qr in queues):
                requeuing_drains += 1
            for qr in queues:
                received += qr.get("received", 0)
                requeued += qr.get("requeued", 0)
                rejected += qr.get("rejected", 0)
                if qr.get("lost"):
                    run.notes.append(f"the function reports {qr['lost']} lost")
        return a

    for start in range(0, n, chunk):
        for i in range(start, min(n, start + chunk)):
            sid = record_id(tag, i)
            run.inputs.append(sid)
            group = f"g{i % 50}"
            run.group_of[sid] = group
            ch.basic_publish("", q, payload(sid, i, rng.randint(60, 400)).encode(),
                             pika.BasicProperties(content_type="application/json", message_id=sid,
                                                  correlation_id=sid, headers={"soak-group": group}))
        conn.process_data_events(0)
        drain()
    empty_rounds = 0
    for _ in range(args.rabbitmq_max_drains):
        ready = ch.queue_declare(q, passive=True).method.message_count
        if ready == 0:
            empty_rounds += 1
            if empty_rounds >= 2:
                break
        else:
            empty_rounds = 0
        drain()
    else:
        run.notes.append(f"the queue was not empty after {args.rabbitmq_max_drains} drains")
    run.replays = requeuing_drains  # drains that gave messages back (nack, requeue)
    run.replayed_records = max(0, received - n)  # deliveries beyond the first of each message
    run.notes.append(f"{requeued} messages requeued by the function, {received - n} redeliveries in all")
    while True:
        m, _props, body = ch.basic_get(dlq, auto_ack=True)
        if m is None:
            break
        sid = body_sid(body.decode("utf-8", "replace"))
        if sid:
            run.reported.add(sid)
    if rejected != len(run.reported):
        run.notes.append(f"the function rejected {rejected}, the dead-letter queue holds {len(run.reported)}")
    conn.close()


# ---------------------------------------------------------------- the comparison

def compare(run, stored, qstats, sender_faults):
    inputs = set(run.inputs)
    counts = {}
    unknown = 0
    first_seen = []
    for m in stored:
        sid = body_sid(m["body"])
        if sid not in inputs:
            unknown += 1
            continue
        if sid not in counts:
            first_seen.append(sid)
        counts[sid] = counts.get(sid, 0) + 1
    found = len(counts)
    missing = [s for s in run.inputs if s not in counts]
    reported_missing = [s for s in missing if s in run.reported]
    lost = [s for s in missing if s not in run.reported]
    dups = sum(c - 1 for c in counts.values())
    inversions = None
    if run.kind == "fifo":
        index = {s: i for i, s in enumerate(run.inputs)}
        last = {}
        inversions = 0
        for s in first_seen:
            g = run.group_of.get(s)
            if g in last and index[s] < last[g]:
                inversions += 1
            last[g] = max(last.get(g, -1), index[s])
    invalid = sum((qstats.get("invalid") or {}).values())
    r = {
        "function": FUNCTIONS[run.source], "queue": run.kind, "queue_name": run.queue,
        "records_in": len(run.inputs), "invocations": run.fn.invocations,
        "function_errors": run.fn.errors, "cold_starts": run.fn_done.get("starts"),
        "replays": run.replays, "replayed_records": run.replayed_records,
        "faults": qstats.get("faults", {}), "faulted_calls": sum(qstats.get("faults", {}).values()),
        "calls": qstats.get("calls", 0), "entry_faults": qstats.get("entry_faults", {}),
        "stored": len(stored), "deduplicated_by_queue": qstats.get("deduplicated", 0),
        "distinct_found": found, "lost": len(lost), "lost_sample": lost[:10],
        "duplicates": dups, "reported_permanent": len(reported_missing),
        "reported_but_in_queue": len(run.reported) - len(reported_missing),
        "unknown_messages": unknown, "invalid_entries": invalid,
        "fifo_order_inversions": inversions, "seconds": round(run.seconds, 1),
        "function_ms": round(run.fn.ms), "notes": run.notes[:10],
    }
    problems = []
    if lost:
        problems.append(f"{len(lost)} lost (e.g. {', '.join(lost[:5])})")
    if run.kind == "fifo" and dups:
        problems.append(f"{dups} duplicates on a FIFO queue")
    if unknown:
        problems.append(f"{unknown} stored messages are no input")
    if invalid:
        problems.append(f"SQS refused entries: {qstats.get('invalid')}")
    if not sender_faults and reported_missing:
        problems.append(f"{len(reported_missing)} reported failed with only retryable faults injected")
    r["problems"] = problems
    return r


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="a few thousand records, debug builds (CI)")
    p.add_argument("--only", default="", help="sources, comma-separated: kinesis,s3,apigw,rabbitmq")
    p.add_argument("--queues", default="standard,fifo")
    p.add_argument("--records", type=int, default=None, help="records per function and queue (default 100000; smoke 2000)")
    p.add_argument("--fault-rate", type=float, default=0.3)
    p.add_argument("--fault-weights", default="", help="KIND=W,... (bench/src/faults.rs)")
    p.add_argument("--no-sender-faults", action="store_true", help="inject retryable faults only")
    p.add_argument("--latency-ms", type=int, default=400, help="longest injected latency")
    p.add_argument("--call-timeout-ms", type=int, default=300, help="the functions' CALL_TIMEOUT_MS")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--profile", default=None, help="release or debug (default release; smoke debug)")
    p.add_argument("--tools-profile", default=None)
    p.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")))
    p.add_argument("--timeout", type=float, default=60, help="the functions' Lambda timeout, seconds")
    p.add_argument("--max-retries", type=int, default=10, help="Kinesis MaximumRetryAttempts")
    p.add_argument("--kinesis-batch", type=int, default=500)
    p.add_argument("--s3-lines", type=int, default=500, help="lines per object")
    p.add_argument("--s3-max-attempts", type=int, default=50)
    p.add_argument("--apigw-lines", type=int, default=100, help="NDJSON lines per request")
    p.add_argument("--rabbitmq-url", default=os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2f"))
    p.add_argument("--rabbitmq-chunk", type=int, default=5000, help="messages published between drains")
    p.add_argument("--rabbitmq-max-drains", type=int, default=500)
    p.add_argument("--fifo-order", default="", help="FIFO_ORDER per source, e.g. s3=batched,apigw=batched")
    p.add_argument("--dump", action="store_true", help="write each queue's messages and inputs to --out")
    p.add_argument("--out", default=os.path.join(ROOT, ".local", "soak"))
    args = p.parse_args()
    if args.records is None:
        args.records = 2000 if args.smoke else 100_000
    if args.smoke:
        args.kinesis_batch = min(args.kinesis_batch, 200)
        args.s3_lines = min(args.s3_lines, 250)
        args.rabbitmq_chunk = min(args.rabbitmq_chunk, 1000)
    profile = args.profile or ("debug" if args.smoke else "release")
    tools = args.tools_profile or profile
    if args.no_sender_faults:
        weights = args.fault_weights or "entry-retryable=30,throttle=20,server-error=16,latency=10,drop-before=10,drop-after=10"
        if "entry-sender" in weights:
            raise SystemExit("--no-sender-faults with entry-sender in --fault-weights")
        args.fault_weights = weights
    sender_faults = not args.no_sender_faults and (not args.fault_weights or "entry-sender" in args.fault_weights)
    fifo_order = {"kinesis": "strict", "rabbitmq": "strict", "s3": "batched", "apigw": "batched"}
    for part in filter(None, args.fifo_order.split(",")):
        k, v = part.split("=")
        fifo_order[k] = v
    sources = [s for s in (args.only.split(",") if args.only else FUNCTIONS) if s]
    kinds = [k for k in args.queues.split(",") if k]
    bench = os.path.join(args.target_dir, tools, "bench")
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)

    if "rabbitmq" in sources:
        try:
            import pika
            pika.BlockingConnection(pika.URLParameters(args.rabbitmq_url)).close()
        except Exception as e:  # noqa: BLE001
            log(f"soak: RabbitMQ at {args.rabbitmq_url} is not reachable ({e}); rabbitmq-to-sqs is skipped")
            sources.remove("rabbitmq")

    stub = Stub(bench, args)
    log(f"soak: stub {stub.url}, faults {json.dumps(stub.queues()['faults'])}")
    started_all = time.monotonic()
    results = []
    try:
        for source in sources:
            for kind in kinds:
                queue = f"soak-{source}" + (".fifo" if kind == "fifo" else "")
                run = Run(source, kind, queue)
                run.queue_rabbit = f"soak-{source}-{kind}"
                env = {"QUEUE_URL": f"{stub.url}/123456789012/{queue}", "AWS_ENDPOINT_URL_SQS": stub.url,
                       "AWS_ENDPOINT_URL_S3": stub.url, "AWS_ACCESS_KEY_ID": "test",
                       "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                       "RETRY_BASE_DELAY_MS": "10", "RETRY_MAX_DELAY_MS": "200",
                       "CALL_TIMEOUT_MS": str(args.call_timeout_ms), "RUST_LOG": "warn"}
                if kind == "fifo":
                    env["FIFO_ORDER"] = fifo_order[source]
                if source == "s3":
                    env.update(MODE="lines", S3_FORCE_PATH_STYLE="true", LINES_PER_SEND="1000")
                if source == "rabbitmq":
                    env.update(RABBITMQ_URL=args.rabbitmq_url, RABBITMQ_QUEUES=run.queue_rabbit,
                               RABBITMQ_MAX_MESSAGES=str(min(5000, args.rabbitmq_chunk)),
                               RABBITMQ_STOP_MARGIN_MS="5000")
                    if kind == "fifo":
                        env["GROUP_ID_FROM"] = "header:soak-group"
                binary = os.path.join(args.target_dir, profile, FUNCTIONS[source])
                log_path = os.path.join(args.out, f"{queue}.log")
                fn = Function(bench, binary, FUNCTIONS[source], env, args.timeout, log_path)
                run.fn = fn
                log(f"soak: {FUNCTIONS[source]} -> {queue} ({args.records:,} records)...")
                t0 = time.monotonic()
                if source == "kinesis":
                    run_kinesis(run, fn, args, rng)
                elif source == "s3":
                    run_s3(run, fn, args, rng, stub)
                elif source == "apigw":
                    run_apigw(run, fn, args, rng)
                elif source == "rabbitmq":
                    run_rabbitmq(run, fn, args, rng)
                run.fn_done = fn.close()
                run.seconds = time.monotonic() - t0
                qstats = stub.queues()["queues"].get(queue, {})
                stored = stub.messages(queue)
                if args.dump:
                    with open(os.path.join(args.out, f"{queue}.ndjson"), "w") as f:
                        for m in stored:
                            f.write(json.dumps(m) + "\n")
                    with open(os.path.join(args.out, f"{queue}.inputs.json"), "w") as f:
                        json.dump({"inputs": run.inputs, "groups": run.group_of,
                                   "reported": sorted(run.reported)}, f)
                r = compare(run, stored, qstats, sender_faults)
                r["fifo_order"] = fifo_order[source] if kind == "fifo" else None
                results.append(r)
                log(f"soak: {FUNCTIONS[source]} -> {queue}: {r['records_in']:,} in, {r['invocations']} invocations, "
                    f"{r['stored']:,} stored, lost {r['lost']}, duplicates {r['duplicates']}, "
                    f"reported {r['reported_permanent']}, {r['seconds']} s"
                    + (f"; PROBLEMS: {'; '.join(r['problems'])}" if r["problems"] else ""))
        faults = stub.queues()["faults"]
    finally:
        stub.stop()
    total = time.monotonic() - started_all
    report = {"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "seconds": round(total, 1),
              "profile": profile, "fault_config": faults, "sender_faults": sender_faults,
              "call_timeout_ms": args.call_timeout_ms, "records_per_run": args.records,
              "command": " ".join(sys.argv[1:]), "runs": results}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(report, f, indent=1)
    print_table(report)
    passed = sum(1 for r in results if not r["problems"])
    failed = len(results) - passed
    print(f"soak: {passed} passed, {failed} failed")
    return 1 if failed or not results else 0


def print_table(report):
    fc = report["fault_config"]
    print(f"Soak {report['when']}: {report['records_per_run']:,} records per function and queue, "
          f"{fc['rate']:.0%} of SendMessageBatch calls faulted (seed {fc['seed']}, latency up to "
          f"{fc['latency_ms']} ms, CALL_TIMEOUT_MS {report['call_timeout_ms']}), "
          f"{'with' if report['sender_faults'] else 'without'} sender faults, {report['profile']} builds; "
          f"{report['seconds']:.0f} s in all")
    print()
    cols = ["function", "queue", "records in", "invocations", "replays", "replayed records", "fn errors", "calls",
            "faulted calls",
            "stored", "distinct found", "lost", "duplicates", "reported permanent", "FIFO inversions", "seconds"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("---" if i < 2 else "---:" for i in range(len(cols))) + "|")
    for r in report["runs"]:
        q = r["queue"] + (f" ({r['fifo_order']})" if r.get("fifo_order") else "")
        dups = f"{r['duplicates']:,}" + (" (must be 0)" if r["queue"] == "fifo" else "")
        inv = "" if r["fifo_order_inversions"] is None else str(r["fifo_order_inversions"])
        vals = [r["function"], q, f"{r['records_in']:,}", f"{r['invocations']:,}", f"{r['replays']:,}",
                f"{r['replayed_records']:,}", str(r["function_errors"]), f"{r['calls']:,}", f"{r['faulted_calls']:,}", f"{r['stored']:,}",
                f"{r['distinct_found']:,}", str(r["lost"]), dups, str(r["reported_permanent"]), inv,
                f"{r['seconds']:.0f}"]
        print("| " + " | ".join(vals) + " |")
    print()
    print("Faults injected, by kind (calls), and entries failed by the injector, by code:")
    for r in report["runs"]:
        kinds = ", ".join(f"{k} {r['faults'].get(k, 0):,}" for k in FAULT_KINDS if k in r["faults"])
        entries = ", ".join(f"{k} {v:,}" for k, v in sorted(r["entry_faults"].items()))
        print(f"- {r['function']} {r['queue']}: {kinds}; entries: {entries or 'none'}; "
              f"deduplicated by the FIFO queue: {r['deduplicated_by_queue']:,}")
    for r in report["runs"]:
        for n in r["notes"]:
            print(f"- note, {r['function']} {r['queue']}: {n}")
        for pr in r["problems"]:
            print(f"- PROBLEM, {r['function']} {r['queue']}: {pr}")


if __name__ == "__main__":
    sys.exit(main())
