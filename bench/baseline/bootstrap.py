#!/usr/bin/env python3
"""A minimal Python custom runtime for the baseline handlers: what Lambda's
own Python runtime does around a handler (poll the runtime API, parse the
JSON event, call the handler, post its JSON answer), with the standard
library only.

    AWS_LAMBDA_RUNTIME_API=127.0.0.1:9001 BASELINE_HANDLER=kinesis \\
        python3 bench/baseline/bootstrap.py

The handler module is imported before the first poll, like Lambda's init
phase: importing boto3 and making its client count in the cold start.
"""

import http.client
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import handlers  # noqa: E402  (the init phase: boto3 import and clients)

PREFIX = "/2018-06-01/runtime"


class Context:
    def __init__(self, headers):
        self.aws_request_id = headers.get("Lambda-Runtime-Aws-Request-Id", "")
        self.invoked_function_arn = headers.get("Lambda-Runtime-Invoked-Function-Arn", "")
        self._deadline_ms = int(headers.get("Lambda-Runtime-Deadline-Ms") or 0)
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "baseline")

    def get_remaining_time_in_millis(self):
        return max(0, self._deadline_ms - int(time.time() * 1000))


def main():
    handler = getattr(handlers, os.environ.get("BASELINE_HANDLER", "kinesis"))
    conn = http.client.HTTPConnection(os.environ["AWS_LAMBDA_RUNTIME_API"])
    while True:
        conn.request("GET", f"{PREFIX}/invocation/next")
        res = conn.getresponse()
        body = res.read()
        context = Context(res.headers)
        try:
            answer = json.dumps(handler(json.loads(body), context)).encode()
            path = f"{PREFIX}/invocation/{context.aws_request_id}/response"
        except Exception as e:  # what Lambda's runtime reports
            traceback.print_exc()
            answer = json.dumps({"errorMessage": str(e), "errorType": type(e).__name__}).encode()
            path = f"{PREFIX}/invocation/{context.aws_request_id}/error"
        conn.request("POST", path, body=answer, headers={"Content-Type": "application/json"})
        conn.getresponse().read()


if __name__ == "__main__":
    main()
