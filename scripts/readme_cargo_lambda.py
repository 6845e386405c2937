#!/usr/bin/env python3
"""Run the README's "Running one function locally with cargo-lambda"
commands, as written there, so they stay true.

Reads the section's shell block from README.md: `scripts/local-sqs.sh start`,
`cargo lambda watch ...` (in the background) and each `cargo lambda invoke
--data-file events/... NAME`. Two things are added, and only these: the
local SQS's address when it is not the README's 127.0.0.1:4566 (the test run
may use another port), and `--invoke-address 127.0.0.1 --invoke-port P` on
watch and invoke, a free port on the loopback (the README's default, port
9000 on every address, may be taken on a shared machine). The queue the
README names is created first, as it says. Each invoke's answer must be the
sample's expected one (scripts/samples.py) and every message must land.

Called by scripts/readme-cargo-lambda.sh with cargo-lambda on PATH. Prints
one line per check and `cargo-lambda: N passed, M failed`.
"""

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import json

import boto3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402
from samples import expected  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "## Running one function locally with cargo-lambda"
README_ENDPOINT = "http://127.0.0.1:4566"

CHECKS = Checks("cargo-lambda")
check = CHECKS.check
finish = CHECKS.finish


def readme_commands():
    """The shell block's commands, continuation lines joined, comments cut."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    if SECTION not in text:
        return []
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    if not block:
        return []
    joined = re.sub(r"\\\n\s*", " ", block.group(1))
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(words)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    commands = readme_commands()
    start = [c for c in commands if c[:2] == ["scripts/local-sqs.sh", "start"]]
    watch = [c for c in commands if c[:3] == ["cargo", "lambda", "watch"]]
    invokes = [c for c in commands if c[:3] == ["cargo", "lambda", "invoke"]]
    if not check(len(start) == 1 and len(watch) == 1 and invokes and len(commands) == 2 + len(invokes),
                 f"README's cargo-lambda block: local SQS start, one watch, {len(invokes)} invokes, "
                 f"nothing else ({len(commands)} commands)"):
        finish()

    # The local SQS, as the README starts it (the test run's port if set).
    got = subprocess.run(start[0], cwd=ROOT, capture_output=True, text=True)
    endpoint = got.stdout.strip()
    if not check(got.returncode == 0 and endpoint.startswith("http://127.0.0.1:"),
                 f"{shlex.join(start[0])} -> {endpoint or got.stderr.strip()[-300:]}"):
        finish()

    def local(words):
        return [w.replace(README_ENDPOINT, endpoint) for w in words]

    env_words = " ".join(watch[0])
    queues = re.findall(re.escape(README_ENDPOINT) + r"/(\d{12})/([A-Za-z0-9_-]+)", env_words)
    if not check(len(queues) == 1, f"the watch command names one queue ({queues})"):
        finish()
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="test", aws_secret_access_key="test")
    url = sqs.create_queue(QueueName=queues[0][1])["QueueUrl"]
    sqs.purge_queue(QueueUrl=url)

    port = str(free_port())
    where = ["--invoke-address", "127.0.0.1", "--invoke-port", port]
    # The log stays out of the watched workspace, or watch rebuilds forever.
    log = tempfile.NamedTemporaryFile(prefix="cargo-lambda-watch-", suffix=".log", delete=False)
    proc = subprocess.Popen(local(watch[0]) + where, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        up = False
        for _ in range(600):
            if proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
                up = True
                break
            except OSError:
                time.sleep(0.5)
        if not check(up, f"cargo lambda watch listens on 127.0.0.1:{port} (log {log.name})"):
            finish()
        landing = 0
        for words in invokes:
            name = words[-1]
            data = words[words.index("--data-file") + 1] if "--data-file" in words else None
            spec = expected(name, data) if data else None
            if not check(spec, f"{shlex.join(words)}: a sample this check knows the answer of"):
                continue
            want, what, count = spec
            started = time.monotonic()
            # The first invoke of a function compiles it: allow for that.
            got = subprocess.run(local(words) + where, cwd=ROOT, capture_output=True, text=True, timeout=1200)
            try:
                answer = json.loads(got.stdout)
            except ValueError:
                answer = None
            ok = got.returncode == 0 and want(answer)
            check(ok, f"{shlex.join(words)} answers {what} ({time.monotonic() - started:.0f} s)" +
                  ("" if ok else f": {got.stdout.strip()[-300:]} {got.stderr.strip()[-500:]}"))
            landing += count
        landed, empty = 0, 0
        while empty < 2:
            msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
            landed += len(msgs)
            empty = empty + 1 if not msgs else 0
            for m in msgs:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        check(landed == landing, f"{landed} of {landing} messages in queue {queues[0][1]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()
    if CHECKS.all_passed():
        os.unlink(log.name)
    finish()


if __name__ == "__main__":
    main()
