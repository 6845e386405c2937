#!/usr/bin/env python3
"""Fill a RabbitMQ queue for the drain workload: purge it, publish N
messages of about SIZE bytes (JSON, content type application/json), and wait
until the broker counts them all ready. Run by the harness before each
invocation (untimed).

    rabbitmq_fill.py AMQP_URL QUEUE N SIZE
"""

import sys
import time

import pika


def main():
    url, queue, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(queue=queue, durable=False)
    ch.queue_purge(queue)
    props = pika.BasicProperties(content_type="application/json")
    pad = "x" * max(0, size - 30)
    for i in range(count):
        ch.basic_publish("", queue, ('{"n":%d,"p":"%s"}' % (i, pad)).encode(), props)
    deadline = time.monotonic() + 60
    while ch.queue_declare(queue=queue, passive=True).method.message_count < count:
        if time.monotonic() > deadline:
            sys.exit(f"{queue}: the broker did not count {count} messages within 60 s")
        time.sleep(0.05)
    conn.close()


if __name__ == "__main__":
    main()
