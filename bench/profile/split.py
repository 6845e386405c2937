#!/usr/bin/env python3
"""Split a folded perf profile (inferno-collapse-perf output) of a forwarder
into where the CPU went (the leaf: kernel, allocator, memmove/memcpy, other
code) and who asked for it (the first frame that names an owner: the SDK's
per-call work, event parsing, our pipeline, the Lambda runtime client).

    bench/profile/split.py FILE.folded [--top N]
"""

import collections
import re
import sys

ALLOC = re.compile(r"(^|[^a-z])(_int_malloc|_int_free|malloc|free|realloc|calloc|cfree|malloc_consolidate|"
                   r"unlink_chunk|_int_realloc|tcache|arena_get|sysmalloc|__rust_alloc|__rust_dealloc|"
                   r"__rdl_alloc|__rdl_dealloc|__rust_realloc|mi_|_rjem_|je_)")
MEMCPY = re.compile(r"memmove|memcpy|memset")
# System call wrappers: perf samples user space only where perf_event_paranoid
# is 2, so the time inside a system call lands on its libc wrapper.
SYSCALL = re.compile(r"__GI___writev|__GI___libc_write|__libc_recv|__libc_send|epoll_wait|__GI___libc_read|"
                     r"__libc_read|__libc_write|__GI___ioctl|syscall$|__GI___clock_nanosleep|madvise|"
                     r"__GI___munmap|__GI___mmap|__mprotect|brk|__GI___sched_yield|writev$|recvfrom|sendto")
OWNERS = [
    # (owner, pattern on a frame), first match from the leaf up wins
    ("SDK per call: signing (SigV4)", re.compile(r"aws_sigv4|sha2::|hmac")),
    ("SDK per call: serializing the request", re.compile(r"ser_send_message_batch|aws_smithy_json::serialize|"
                                                         r"serialize_structure_crate_types_send_message")),
    ("SDK per call: parsing the answer", re.compile(r"de_send_message_batch|aws_smithy_json::deserialize")),
    ("SDK per call: HTTP client (hyper)", re.compile(r"^hyper::|hyper_util|aws_smithy_http_client|h2::")),
    ("SDK per call: orchestrator, interceptors, endpoint, identity",
     re.compile(r"aws_smithy_runtime|aws_runtime|aws_sdk_sqs|aws_smithy_types|aws_smithy_runtime_api|"
                r"aws_credential_types|aws_types|aws_smithy_http")),
    ("our pipeline: entries for the SDK (to_sdk_entry)", re.compile(r"to_sdk_entry|SqsTransport.*send_batch")),
    ("event parsing (JSON, base64, KPL)", re.compile(r"serde_json|serde::de|aws_lambda_events|base64|prost|"
                                                     r"kinesis_to_sqs::kpl|deserialize")),
    # Before "our pipeline": rabbitmq-to-sqs's own client (src/amqp*) is the
    # AMQP client's share, as lapin's thread was before it.
    ("AMQP client (frames, deliveries: rabbitmq-to-sqs's amqp module; lapin before 2026-12-04)",
     re.compile(r"rabbitmq_to_sqs::amqp|lapin|amq_protocol|flume")),
    ("our pipeline: messages, encoding, packing, outcomes", re.compile(r"sqs_forwarder|kinesis_to_sqs|s3_to_sqs|"
                                                                       r"apigw_to_sqs|rabbitmq_to_sqs")),
    ("Lambda runtime client", re.compile(r"lambda_runtime")),
    ("tokio (scheduler, timers, I/O driver)", re.compile(r"tokio::")),
]


def leaf_kind(frames):
    leaf = frames[-1]
    if leaf.endswith("_[k]") or "[kernel" in leaf:
        return "kernel"
    # the innermost user frame decides: allocator or copy or code
    for f in reversed(frames):
        if f.endswith("_[k]"):
            continue
        if SYSCALL.search(f):
            return "kernel"
        if ALLOC.search(f):
            return "allocator (malloc/free)"
        if MEMCPY.search(f):
            return "memmove/memcpy"
        return "other user code"
    return "other user code"


def owner(frames):
    for f in reversed(frames):
        if f.endswith("_[k]"):
            continue
        for name, pat in OWNERS:
            if pat.search(f):
                return name
    return "other (process start, libc, unknown)"


def main():
    path = sys.argv[1]
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 25
    by_leaf, by_owner, by_both = collections.Counter(), collections.Counter(), collections.Counter()
    by_func = collections.Counter()
    total = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            n = int(n)
            frames = stack.split(";")
            total += n
            lk, ow = leaf_kind(frames), owner(frames)
            by_leaf[lk] += n
            by_owner[ow] += n
            by_both[(ow, lk)] += n
            user = [x for x in frames if not x.endswith("_[k]")]
            by_func[re.sub(r"_\[[a-z]\]$", "", (user or frames)[-1])[:140]] += n
    pct = lambda n: 100.0 * n / total  # noqa: E731
    print(f"samples (weight): {total}")
    print("\nwhere the CPU went (leaf):")
    for k, n in by_leaf.most_common():
        print(f"  {pct(n):5.1f}%  {k}")
    print("\nwho asked for it (owner), and of that the allocator and kernel:")
    for k, n in by_owner.most_common():
        a, kk = by_both[(k, "allocator (malloc/free)")], by_both[(k, "kernel")]
        print(f"  {pct(n):5.1f}%  {k}  (allocator {pct(a):.1f}%, kernel {pct(kk):.1f}%)")
    print(f"\ntop {top} leaf functions:")
    for k, n in by_func.most_common(top):
        print(f"  {pct(n):5.1f}%  {k}")


if __name__ == "__main__":
    main()
