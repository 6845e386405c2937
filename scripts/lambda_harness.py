#!/usr/bin/env python3
"""Run a Lambda function binary the way Lambda runs it, locally.

Serves the Lambda runtime API (2018-06-01) on 127.0.0.1, starts the function's
binary with AWS_LAMBDA_RUNTIME_API pointing at it, hands it the given events
one by one, and prints one JSON line per invocation (status, response or
error, duration) and a final summary line with the cold start (process start
to the first request for an event) and the EMF metrics the function wrote.

    lambda_harness.py --binary target/debug/kinesis-to-sqs \
        --env QUEUE_URL=... --timeout 30 events/kinesis.json [more.json ...]

`--runner` runs the binary under another program, e.g. an arm64 bootstrap
on an x86_64 machine: `--runner "qemu-aarch64 -L /usr/aarch64-linux-gnu"`.
The summary line also names the EMF namespaces and dimension sets the
function wrote.

It also stands in for Lambda's Invoke API (AWS_ENDPOINT_URL_LAMBDA points at
it): an asynchronous invocation the function makes of itself (s3-to-sqs's
continuation) is queued and handed to the function after the given events,
as Lambda would run it.

Standard library only; stops the function when the events are done.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/2018-06-01/runtime"


class Runtime:
    def __init__(self, events, timeout_s, function_name):
        self.events = list(events)
        self.timeout_s = timeout_s
        self.function_name = function_name
        self.lock = threading.Condition()
        self.next_index = 0
        self.current = None  # (request id, index, started)
        self.results = []
        self.first_poll = None
        self.init_error = None
        self.done = threading.Event()

    def next_event(self):
        with self.lock:
            if self.first_poll is None:
                self.first_poll = time.monotonic()
            if self.next_index >= len(self.events):
                self.done.set()
                return None
            index = self.next_index
            self.next_index += 1
            request_id = str(uuid.uuid4())
            self.current = (request_id, index, time.monotonic())
            return request_id, self.events[index]

    def queue(self, event):
        with self.lock:
            self.events.append(event)

    def finish(self, request_id, kind, body):
        with self.lock:
            if not self.current or self.current[0] != request_id:
                return False
            _, index, started = self.current
            self.current = None
            try:
                parsed = json.loads(body) if body else None
            except ValueError:
                parsed = body.decode("utf-8", "replace")
            self.results.append({
                "event": index,
                "status": kind,
                "duration_ms": round((time.monotonic() - started) * 1000, 2),
                kind: parsed,
            })
            return True


def make_handler(runtime):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, code, body=b"", headers=None):
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path != PREFIX + "/invocation/next":
                return self._send(404)
            item = runtime.next_event()
            if item is None:
                # Nothing more: keep the poll open until the harness stops the process.
                runtime.done.wait()
                time.sleep(3600)
                return
            request_id, event = item
            deadline_ms = int((time.time() + runtime.timeout_s) * 1000)
            body = json.dumps(event).encode()
            self._send(200, body, {
                "Content-Type": "application/json",
                "Lambda-Runtime-Aws-Request-Id": request_id,
                "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
                "Lambda-Runtime-Invoked-Function-Arn":
                    f"arn:aws:lambda:us-east-1:123456789012:function:{runtime.function_name}",
                "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000;Sampled=0",
            })

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            invoke = f"/2015-03-31/functions/{runtime.function_name}/invocations"
            if self.path.split("?")[0] == invoke:
                if self.headers.get("X-Amz-Invocation-Type") != "Event":
                    return self._send(400, b'{"message": "only asynchronous (Event) invocations here"}')
                runtime.queue(json.loads(body or b"null"))
                return self._send(202)
            parts = self.path[len(PREFIX):].strip("/").split("/")
            if parts == ["init", "error"]:
                runtime.init_error = body.decode("utf-8", "replace")
                runtime.done.set()
                return self._send(202)
            if len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
                ok = runtime.finish(parts[1], parts[2], body)
                return self._send(202 if ok else 400)
            return self._send(404)

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the function")
    ap.add_argument("--timeout", type=float, default=30.0, help="the function's timeout, seconds")
    ap.add_argument("--name", default=None, help="function name (default: the binary's)")
    ap.add_argument("--runner", default="", help="a command to run the binary under (split on spaces)")
    ap.add_argument("events", nargs="+", help="JSON files, one event each")
    args = ap.parse_args()

    events = []
    for path in args.events:
        with open(path, encoding="utf-8") as f:
            events.append(json.load(f))
    name = args.name or os.path.basename(args.binary)
    runtime = Runtime(events, args.timeout, name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(runtime))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()

    env = dict(os.environ)
    env.update({
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{server.server_address[1]}",
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "local",
        "AWS_ENDPOINT_URL_LAMBDA": f"http://127.0.0.1:{server.server_address[1]}",
    })
    for kv in args.env:
        k, _, v = kv.partition("=")
        env[k] = v
    started = time.monotonic()
    proc = subprocess.Popen(args.runner.split() + [args.binary], env=env, stdout=subprocess.PIPE, stderr=sys.stderr)
    emf = []

    def read_stdout():
        for line in proc.stdout:
            text = line.decode("utf-8", "replace").strip()
            try:
                doc = json.loads(text)
            except ValueError:
                print(text, file=sys.stderr)
                continue
            if isinstance(doc, dict) and "_aws" in doc:
                emf.append(doc)
            else:
                print(text, file=sys.stderr)

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    def limit():
        return started + args.timeout * len(runtime.events) + 30

    while not runtime.done.is_set() and proc.poll() is None and time.monotonic() < limit():
        time.sleep(0.01)
    exited = proc.poll()
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
    reader.join(timeout=2)
    server.shutdown()

    for r in runtime.results:
        print(json.dumps(r))
    totals = {}
    namespaces, dimensions = set(), set()
    for doc in emf:
        for directive in doc["_aws"]["CloudWatchMetrics"]:
            namespaces.add(directive.get("Namespace"))
            for dims in directive.get("Dimensions", []):
                dimensions.add(tuple((d, str(doc.get(d))) for d in dims))
        for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
            # EMF takes a value or an array of values (up to 100 per
            # metric and document): the total counts every value.
            value = doc.get(m["Name"], 0)
            values = value if isinstance(value, list) else [value]
            totals[m["Name"]] = totals.get(m["Name"], 0) + sum(
                v for v in values if isinstance(v, (int, float)))
    summary = {
        "summary": name,
        "events": len(runtime.events),
        "queued": len(runtime.events) - len(events),
        "answered": len(runtime.results),
        "errors": sum(1 for r in runtime.results if r["status"] == "error"),
        "cold_start_ms": round((runtime.first_poll - started) * 1000, 2) if runtime.first_poll else None,
        "init_error": runtime.init_error,
        "exited_early": exited,
        "metrics": totals,
        "emf_namespaces": sorted(namespaces),
        "emf_dimensions": [dict(d) for d in sorted(dimensions)],
    }
    print(json.dumps(summary))
    ok = runtime.init_error is None and len(runtime.results) == len(runtime.events)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
