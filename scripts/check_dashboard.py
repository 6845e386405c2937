"""The dashboard and the outputs of template.yaml, checked against the code.

Used by scripts/check_template.py (and scripts/deploy_build.py, which checks
that the built functions' metrics are on the dashboard).

* The metrics the code emits are read from the Rust source
  (scripts/emitted_metrics.py), not listed here: renaming a metric in the
  code without the dashboard fails the check. The namespace is the
  template's `METRICS_NAMESPACE` if it sets one, else the code's default.
* A metric the code records with labels has one more dimension per label
  (read from the code too). A dashboard line must name a dimension set the
  code emits that metric with: the default ones, or those plus the labels
  of one of its calls. A labelled form is shown by a SEARCH expression on
  its schema (`{Namespace,Label,Service}`, MetricName and Service given):
  the label's values (queue names) are only known at run time. Other
  expressions are refused, as the check cannot tell what they show.
* An alarm on metric math (`Metrics`) has each of its MetricStat metrics
  on a graph, one result, and no function the AWS docs advise against in
  alarms.
* The dashboard body is rendered as CloudFormation would
  (scripts/template_render.py) for several sets of parameters (conditions
  on or off); every rendering must be valid JSON.
* The dashboard's note (its text widget) reads in the order of "The
  dashboard: what to read first" in docs/operating.md, and the sections of
  that document it names exist; it names no section of the README, which
  has none of them.
* docs/operating.md's outputs and alarm tables name every output and alarm
  of the template, and nothing else.
"""

import copy
import json
import os
import re

from emitted_metrics import code_metrics, read_source
from template_render import NOVALUE, Stack

# The AWS metrics the dashboard may show (AWS docs: "Monitoring functions"
# (AWS/Lambda) and "Available CloudWatch metrics for Amazon SQS").
AWS_METRICS = {
    "AWS/Lambda": ({"Errors", "Throttles", "Duration", "Invocations", "IteratorAge",
                    "ConcurrentExecutions", "AsyncEventAge", "AsyncEventsDropped"}, "FunctionName"),
    "AWS/SQS": ({"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage",
                 "ApproximateNumberOfMessagesNotVisible", "NumberOfMessagesSent"}, "QueueName"),
}
LAMBDA_ROW = ["Errors", "Throttles", "Duration"]
# A SEARCH expression on a dashboard: SEARCH('{Namespace,Dim,...}
# MetricName="Name" Dim="value" ...', 'Stat', period). Only exact terms
# (Name="value") are read; a dimension of the schema without a term
# matches every value (ANY).
SEARCH = re.compile(r"""SEARCH\(\s*'\{([^}]*)\}((?:\s+[A-Za-z0-9_]+="[^"]*")*)\s*'"""
                    r"""\s*,\s*'[A-Za-z0-9.]+'\s*(?:,\s*\d+\s*)?\)""")
TERM = re.compile(r'([A-Za-z0-9_]+)="([^"]*)"')
ANY = "*"
# Metric math functions an alarm may not use: SEARCH (CloudWatch refuses
# it in alarms), and those the AWS docs ("Metric math syntax and
# functions") advise against in alarms, since an alarm fetches more data
# points than it evaluates and these change with them.
NOT_IN_ALARMS = {"SEARCH", "AVG", "DATAPOINT_COUNT", "MAX", "MIN", "REMOVE_EMPTY", "RUNNING_SUM", "STDDEV", "SUM"}
QUEUE_METRICS = ["ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"]

# Parameter sets the dashboard and outputs are rendered with: the defaults,
# then the conditions flipped.
SCENARIOS = [
    ("defaults", {}),
    ("FIFO, offload", {"QueueType": "fifo", "OversizePolicy": "offload"}),
    ("existing queue and stream", {"TargetQueueArn": "arn:aws:sqs:eu-west-1:222222222222:orders",
                                   "KinesisStreamArn": "arn:aws:kinesis:us-east-1:111111111111:stream/s"}),
]


# ---- The dashboard -------------------------------------------------------------------

def dashboards(tpl):
    return {n: r for n, r in tpl.get("Resources", {}).items() if r.get("Type") == "AWS::CloudWatch::Dashboard"}


def search_line(expression):
    """(namespace, metric name, dimensions) a SEARCH expression shows, the
    dimensions without a term ANY; None if it is not one the check reads
    (see SEARCH) or names no metric."""
    m = SEARCH.fullmatch(str(expression).strip())
    if not m:
        return None
    schema = [x.strip().strip('"') for x in m.group(1).split(",")]
    pairs = TERM.findall(m.group(2))
    terms = dict(pairs)
    name = terms.pop("MetricName", None)
    if not name or len(terms) + 1 != len(pairs) or not set(terms) <= set(schema[1:]):
        return None
    return schema[0], name, {d: terms.get(d, ANY) for d in schema[1:]}


def metric_lines(body):
    """(widget, namespace, name, dimensions dict, options) of every metric on
    a dashboard; "." repeats the previous line's value. A SEARCH line's
    options hold its "expression"; its dimensions without a term are ANY."""
    out = []
    for w in body.get("widgets", []):
        if w.get("type") != "metric":
            continue
        prev = []
        for line in w.get("properties", {}).get("metrics", []):
            opts = line[-1] if line and isinstance(line[-1], dict) else {}
            if len(line) == 1 and "expression" in opts:
                found = search_line(opts["expression"])
                out.append((w, *found, opts) if found else
                           (w, None, f"expression {opts['expression']!r} (only a SEARCH naming its "
                                     "MetricName and exact Dim=\"value\" terms is read)", {}, opts))
                continue
            vals = [x for x in line if not isinstance(x, dict)]
            vals = [prev[i] if x == "." and i < len(prev) else x for i, x in enumerate(vals)]
            prev = vals
            if len(vals) < 2 or len(vals) % 2:
                out.append((w, None, str(line), {}, opts))
                continue
            out.append((w, vals[0], vals[1], dict(zip(vals[2::2], vals[3::2])), opts))
    return out


def function_crates(tpl):
    return {n: os.path.basename(str(r.get("Properties", {}).get("CodeUri", "")).rstrip("/"))
            for n, r in tpl.get("Resources", {}).items() if r.get("Type") == "AWS::Serverless::Function"}


def namespace_of(stack, code):
    env = stack.tpl.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    ns = stack.render(env["METRICS_NAMESPACE"]) if "METRICS_NAMESPACE" in env else NOVALUE
    return code["namespace"] if ns is NOVALUE else ns


def check_body(stack, body, code):
    """Problems of one rendered dashboard, by check: 'emitted', 'aws',
    'rows', 'queues', 'alarms', 'grid'."""
    p = {k: [] for k in ("emitted", "aws", "rows", "queues", "alarms", "grid")}
    crates = function_crates(stack.tpl)
    services = {code["functions"][c]["service"]: c for c in crates.values() if c in code["functions"]}
    ns = namespace_of(stack, code)
    lines = metric_lines(body)
    base = code["dimensions"]
    shown = set()  # (namespace, name, frozenset(dims.items()))
    for w, namespace, name, dims, opts in lines:
        shown.add((namespace, name, frozenset(dims.items())))
        if namespace is None:
            p["emitted"].append(f"unreadable metric line {name}")
        elif namespace.startswith("AWS/"):
            allowed, dim = AWS_METRICS.get(namespace, (set(), None))
            if name not in allowed:
                p["aws"].append(f"{namespace} {name} is not a metric the dashboard may show")
            target = dims.get(dim, "") if set(dims) == {dim} else ""
            m = re.fullmatch(r"<([A-Za-z0-9]+)(\.QueueName)?>", target)
            kind = {"FunctionName": "AWS::Serverless::Function", "QueueName": "AWS::SQS::Queue"}.get(dim)
            if not m or m.group(1) not in stack.resources or stack.resources[m.group(1)].get("Type") != kind \
                    or (dim == "QueueName") != bool(m.group(2)):
                p["aws"].append(f"{namespace} {name} {dims}: not a {kind} of the stack")
        else:
            service = dims.get(base[0]) if base else None
            search = "SEARCH " if "expression" in opts else ""
            if namespace != ns:
                p["emitted"].append(f"{search}{name}: namespace {namespace}, the code emits {ns}")
            forms = code["functions"][services[service]]["forms"] if service in services else {}
            if not set(base) <= set(dims):
                p["emitted"].append(f"{search}{name}: dimensions {sorted(dims)}, the code emits {base} "
                                    "(and the labels of a labelled metric)")
            elif service not in services:
                p["emitted"].append(f"{search}{name}: no function has the service {service!r}" +
                                    (f" (a SEARCH gives {base[0]}=\"<service>\")" if search else ""))
            elif name not in forms:
                p["emitted"].append(f"{search}{name}: {service} does not emit it")
            elif frozenset(set(dims) - set(base)) not in forms[name]:
                emits = sorted(sorted(set(base) | labels) for labels in forms[name])
                p["emitted"].append(f"{search}{name}: dimensions {sorted(dims)}, {service} emits it with {emits}")

    # One row per function, with everything its code emits and its Lambda metrics.
    rows = {}
    for fn, crate in crates.items():
        info = code["functions"].get(crate)
        if not info:
            p["rows"].append(f"{fn}: no crate {crate}")
            continue
        service = info["service"]
        # Each form of each metric: the plain one as a line, a labelled one
        # as a SEARCH over its labels (ANY).
        want = [(ns, m, frozenset({**{base[0]: service}, **{lb: ANY for lb in labels}}.items()) if base else None,
                 f" by {'/'.join(sorted(labels))} (a SEARCH)" if labels else "")
                for m in sorted(info["forms"]) for labels in sorted(info["forms"][m], key=sorted)]
        lambda_metrics = LAMBDA_ROW + (["IteratorAge"] if is_stream_consumer(stack.tpl, fn) else [])
        want += [("AWS/Lambda", m, frozenset({"FunctionName": f"<{fn}>"}.items()), "") for m in lambda_metrics]
        missing = [f"{n} {m}{how}" for n, m, d, how in want if (n, m, d) not in shown]
        if missing:
            p["rows"].append(f"{fn}: not on the dashboard: {missing}")
        ys = {w.get("y") for w, namespace, name, dims, _ in lines
              if dims.get("FunctionName") == f"<{fn}>" or (base and dims.get(base[0]) == service)}
        if len(ys) != 1:
            p["rows"].append(f"{fn}: its widgets are on {len(ys)} rows ({sorted(y for y in ys if y is not None)})")
        else:
            rows.setdefault(ys.pop(), []).append(fn)
    for y, fns in rows.items():
        if len(fns) > 1:
            p["rows"].append(f"{fns} share the row at y={y}")

    # Every queue of the stack.
    for q, r in stack.resources.items():
        if r.get("Type") == "AWS::SQS::Queue":
            for m in QUEUE_METRICS:
                if ("AWS/SQS", m, frozenset({"QueueName": f"<{q}.QueueName>"}.items())) not in shown:
                    p["queues"].append(f"{q}: {m} not on the dashboard")

    # Every alarm: on an alarm widget, and its metric on a graph.
    on_widgets = set()
    for w in body.get("widgets", []):
        on_widgets.update(w.get("properties", {}).get("alarms", []) or [])
        on_widgets.update((w.get("properties", {}).get("annotations", {}) or {}).get("alarms", []) or [])
    for a, r in stack.resources.items():
        if r.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        if f"<{a}.Arn>" not in on_widgets:
            p["alarms"].append(f"{a}: on no alarm widget")
        props = stack.render(r.get("Properties", {}))
        if "Metrics" in props:
            p["alarms"] += [f"{a}: {x}" for x in math_alarm(props["Metrics"], shown)]
            continue
        dims = frozenset((d["Name"], d["Value"]) for d in props.get("Dimensions", []))
        if (props.get("Namespace"), props.get("MetricName"), dims) not in shown:
            p["alarms"].append(f"{a}: its metric {props.get('Namespace')} {props.get('MetricName')} is on no graph")
    for arn in on_widgets:
        m = re.fullmatch(r"<([A-Za-z0-9]+)\.Arn>", str(arn))
        if not m or m.group(1) not in stack.resources:
            p["alarms"].append(f"alarm widget names {arn}, not an alarm of the stack")

    # The 24-column grid, no overlaps.
    cells = {}
    for i, w in enumerate(body.get("widgets", [])):
        x, y, wd, h = (w.get(k) for k in ("x", "y", "width", "height"))
        if not all(isinstance(v, int) for v in (x, y, wd, h)) or x < 0 or x + wd > 24:
            p["grid"].append(f"widget {i} ({w.get('properties', {}).get('title')}) is off the grid")
            continue
        for cx in range(x, x + wd):
            for cy in range(y, y + h):
                if (cx, cy) in cells:
                    p["grid"].append(f"widgets {cells[(cx, cy)]} and {i} overlap at x={cx}, y={cy}")
                    break
                cells[(cx, cy)] = i
            else:
                continue
            break
    return p


def math_alarm(queries, shown):
    """Problems of an alarm on metric math (its rendered `Metrics`): each
    MetricStat's metric on a graph, one result (ReturnData, true unless
    given), no function of NOT_IN_ALARMS."""
    problems = []
    stats = [q["MetricStat"].get("Metric", {}) for q in queries if "MetricStat" in q]
    if not stats:
        problems.append("its Metrics retrieve no metric (MetricStat)")
    for m in stats:
        dims = frozenset((d["Name"], d["Value"]) for d in m.get("Dimensions", []))
        if (m.get("Namespace"), m.get("MetricName"), dims) not in shown:
            problems.append(f"its metric {m.get('Namespace')} {m.get('MetricName')} {dict(dims)} is on no graph")
    results = [q.get("Id") for q in queries if q.get("ReturnData", True) is not False]
    if len(results) != 1:
        problems.append(f"{len(results)} results (ReturnData true): {results}")
    for q in queries:
        bad = sorted(set(re.findall(r"\b([A-Z][A-Z0-9_]*)\s*\(", str(q.get("Expression", "")))) & NOT_IN_ALARMS)
        if bad:
            problems.append(f"{q.get('Id')}: {q['Expression']} uses {bad}, not for alarms")
    return problems


def is_stream_consumer(tpl, fn):
    events = tpl["Resources"][fn].get("Properties", {}).get("Events", {}) or {}
    return any(e.get("Type") in ("Kinesis", "DynamoDB") for e in events.values())


def render_dashboards(tpl, overrides):
    """(stack, {dashboard: parsed body or the JSON error})."""
    stack = Stack(tpl, overrides)
    out = {}
    for name in dashboards(tpl):
        if name not in stack.resources:
            continue
        text = stack.render(tpl["Resources"][name]["Properties"]["DashboardBody"])
        try:
            out[name] = json.loads(text)
        except (TypeError, ValueError) as e:
            out[name] = e
    return stack, out


def check_outputs(stack):
    """What a user needs after `sam deploy`: the HTTP endpoint, every queue's
    URL, the dashboard's console URL, the payload bucket when it exists."""
    outputs = {}
    for n, o in stack.tpl.get("Outputs", {}).items():
        if o.get("Condition") is None or stack.conds.get(o["Condition"]):
            outputs[n] = str(stack.render(o.get("Value")))
    problems = []
    for r, res in stack.resources.items():
        kind = res.get("Type")
        need = {"AWS::SQS::Queue": f"<{r}>", "AWS::CloudWatch::Dashboard": f"<{r}>",
                "AWS::ApiGatewayV2::Api": f"https://<{r}>.execute-api."}.get(kind)
        if kind == "AWS::S3::Bucket" and r == "PayloadBucket":
            need = f"<{r}>"
        if need and not any(need in v for v in outputs.values()):
            problems.append(f"{r} ({kind}): no output gives it")
    dash = [v for v in outputs.values() if "console.aws.amazon.com/cloudwatch" in v and "#dashboards/dashboard/<" in v]
    if dashboards(stack.tpl) and not dash:
        problems.append("no output is the dashboard's console URL")
    return problems


def read_doc(root):
    """The text of docs/operating.md, where the outputs, the dashboard and
    the alarms are documented."""
    return open(os.path.join(root, *DOC.split("/")), encoding="utf-8").read()


def doc_names(root, heading, doc=None):
    """The backticked names in the first column of the table under `heading`
    in docs/operating.md."""
    text = doc if doc is not None else read_doc(root)
    if heading not in text:
        return set()
    section = text.split(heading, 1)[1].split("\n#", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            names.update(re.findall(r"`([A-Za-z0-9]+)`", line.split("|")[1]))
    return names


DOC = "docs/operating.md"
OUTPUTS_HEADING = "## After `sam deploy`: the outputs"
ALARMS_HEADING = "## Which alarm fires for which failure"
GUIDE_HEADING = "## The dashboard: what to read first"
STEP = re.compile(r"^\d+\. \*\*([^*]+)\*\*", re.M)
# How the dashboard's note names a section: "docs/operating.md, *Title*".
SECTION_REF = re.compile(re.escape(DOC) + r", \*([^*]+)\*")
# How it named them when they were in the README.
README_REF = re.compile(r"the README's \*([^*]+)\*")


def guide_matches(tpl, root, doc=None):
    """Problems: the dashboard's text widget against docs/operating.md. Each
    section it names ("docs/operating.md, *Title*") must be a heading there,
    it must name no README section ("the README's *Title*": the README has
    none of them), and its numbered steps (`1. **Alarms** ...`) must be the
    document's, in the document's order."""
    text = doc if doc is not None else read_doc(root)
    headings = {h.strip() for h in re.findall(r"^#+ (.+)$", text, re.M)}
    section = text.split(GUIDE_HEADING, 1)[1].split("\n#", 1)[0] if GUIDE_HEADING in text else ""
    doc_steps = STEP.findall(section)
    _, bodies = render_dashboards(tpl, {})
    problems = [] if doc_steps else [f"{DOC} has no numbered steps under {GUIDE_HEADING!r}"]
    for name, body in bodies.items():
        if isinstance(body, Exception):
            continue
        notes = [w.get("properties", {}).get("markdown", "") for w in body.get("widgets", [])
                 if w.get("type") == "text"]
        guide = [n for n in notes if STEP.search(n)]
        if len(guide) != 1:
            problems.append(f"{name}: {len(guide)} text widgets with numbered steps, not one")
            continue
        steps = STEP.findall(guide[0])
        if steps != doc_steps:
            problems.append(f"{name}: steps {steps}, {DOC}'s are {doc_steps}")
        for title in SECTION_REF.findall(guide[0]):
            if title not in headings:
                problems.append(f"{name}: names {DOC}'s {title!r}, which has no such heading")
        for title in README_REF.findall(guide[0]):
            problems.append(f"{name}: names the README's {title!r}; the section is in {DOC}")
    return problems


def doc_matches(tpl, root, doc=None):
    """Problems: template outputs and alarms the tables of docs/operating.md
    do not name, and names there the template does not have."""
    problems = []
    outputs = set(tpl.get("Outputs", {}))
    alarms = {n for n, r in tpl.get("Resources", {}).items() if r.get("Type") == "AWS::CloudWatch::Alarm"}
    for what, have, heading in (("output", outputs, OUTPUTS_HEADING), ("alarm", alarms, ALARMS_HEADING)):
        documented = doc_names(root, heading, doc)
        problems += [f"{what} {n} is not in {DOC}'s table" for n in sorted(have - documented)]
        problems += [f"{DOC}'s table names {what} {n}, the template has none" for n in sorted(documented - have)]
    return problems


def run(tpl, root, check):
    """All dashboard and output checks, then their negative tests."""
    crates = sorted(set(function_crates(tpl).values()))
    code = code_metrics(root, crates=crates)
    check(not code["problems"], "the metrics' names can be read from the code" +
          (f": {code['problems']}" if code["problems"] else ""))
    check(code["namespace"] and code["dimensions"] and all(f["service"] for f in code["functions"].values()),
          f"the code's EMF namespace {code['namespace']}, dimensions {code['dimensions']}, "
          f"services {sorted(f['service'] for f in code['functions'].values() if f['service'])}")
    check(len(dashboards(tpl)) == 1, "the template has one CloudWatch dashboard")
    results = evaluate(tpl, code)
    labels = {
        "json": "the dashboard body is valid JSON",
        "emitted": "every SqsForwarder metric on the dashboard, SEARCH lines too, is one the code emits (name, "
                   "namespace, dimensions: the default ones, or those and the labels of a labelled metric)",
        "aws": "every AWS metric on the dashboard is a known one of a function or queue of the stack",
        "rows": "one row per function: every metric its code emits (a labelled one also by a SEARCH on its "
                "labels), Lambda errors, throttles, duration (and iterator age for the stream consumer)",
        "queues": "every queue: visible messages and age of the oldest message",
        "alarms": "every alarm is on the alarm widget and its metric on a graph (each of a metric-math "
                  "alarm's, with one result and no function unfit for alarms)",
        "grid": "the widgets fit the 24-column grid without overlapping",
        "outputs": "outputs: the HTTP endpoint, every queue's URL, the dashboard's URL, the payload bucket",
    }
    for key, label in labels.items():
        bad = results.get(key, [])
        check(not bad, f"{label} ({len(SCENARIOS)} parameter sets)" + (f": {bad[:5]}" if bad else ""))
    bad = doc_matches(tpl, root)
    check(not bad, f"{DOC}'s outputs and alarm tables name every output and alarm of the template, "
                   "and nothing else" + (f": {bad}" if bad else ""))
    bad = guide_matches(tpl, root)
    check(not bad, f"the dashboard's reading order is {DOC}'s (same steps, same order) and every section "
                   "of it the dashboard names is there" + (f": {bad}" if bad else ""))
    negative_tests(tpl, root, code, crates, check)


def evaluate(tpl, code):
    """Problems by check, over every parameter set."""
    results = {}
    for label, overrides in SCENARIOS:
        stack, bodies = render_dashboards(tpl, overrides)
        for name, body in bodies.items():
            if isinstance(body, Exception):
                results.setdefault("json", []).append(f"{label}: {name}: {body}")
                continue
            for key, problems in check_body(stack, body, code).items():
                results.setdefault(key, []).extend(f"{label}: {x}" for x in problems)
        results.setdefault("outputs", []).extend(f"{label}: {x}" for x in check_outputs(stack))
    return results


def negative_tests(tpl, root, code, crates, check):
    """Each check fails on a template or code that breaks it."""
    read = read_source(root)
    dash = next(iter(dashboards(tpl)), None)
    if dash is None:
        return

    def with_source(rel, fn):
        def mutated(path):
            text = read(path)
            return fn(text) if path == rel else text
        return code_metrics(root, read=mutated, crates=crates)

    renamed = with_source("shared/src/observe/metrics.rs", lambda t: t.replace('"MessagesSent"', '"MessagesAccepted"'))
    r = evaluate(tpl, renamed)
    check(r.get("emitted") and r.get("rows"),
          "negative: MessagesSent renamed in shared/src/observe/metrics.rs fails the emitted and row checks")
    added = with_source("shared/src/observe/metrics.rs", lambda t: t.replace(
        "pub(crate) fn retry() {", 'pub const LOST: &str = "MessagesLost";\n'
        "pub(crate) fn lost() { metrics::counter!(LOST).increment(1); }\npub(crate) fn retry() {"))
    check(evaluate(tpl, added).get("rows"),
          "negative: a new metric in the code, not on the dashboard, fails the row check")
    ns = with_source("shared/src/setup/config/variables.rs", lambda t: t.replace(
        '"SqsForwarder",', '"Forwarder",'))
    check(evaluate(tpl, ns).get("emitted"), "negative: another default namespace in the code fails the emitted check")
    service = with_source("functions/s3-to-sqs/src/lib.rs", lambda t: t.replace(
        'SERVICE: &str = "s3-to-sqs"', 'SERVICE: &str = "s3-forwarder"'))
    check(evaluate(tpl, service).get("emitted"), "negative: a renamed SERVICE fails the emitted check")
    labelled = with_source("shared/src/observe/metrics.rs", lambda t: t.replace(
        "metrics::counter!(RETRIES)", 'metrics::counter!(RETRIES, "queue" => "q")'))
    r = evaluate(tpl, labelled)
    check(not labelled["problems"] and any("Retries by queue" in x for x in r.get("rows", [])),
          "negative: a labelled counter (an extra EMF dimension) the dashboard shows only unlabelled "
          "fails the row check")
    drain = "functions/rabbitmq-to-sqs/src/drain.rs"
    renamed_label = with_source(drain, lambda t: t.replace('QUEUE_BACKLOG, "Queue" =>',
                                                           'QUEUE_BACKLOG, "QueueName" =>'))
    r = evaluate(tpl, renamed_label)
    check(any("SEARCH QueueBacklog" in x for x in r.get("emitted", [])) and r.get("rows"),
          "negative: QueueBacklog's label renamed in the code (Queue to QueueName) fails the emitted check "
          "(the dashboard's SEARCH) and the row check")
    unlabelled = with_source(drain, lambda t: re.sub(r'QUEUE_BACKLOG, "Queue" => [^)]*\)', "QUEUE_BACKLOG)", t))
    check(any("SEARCH QueueBacklog" in x for x in evaluate(tpl, unlabelled).get("emitted", [])),
          "negative: QueueBacklog no longer recorded by queue fails the emitted check (the dashboard's SEARCH)")
    unread = with_source(drain, lambda t: t.replace('QUEUE_BACKLOG, "Queue" =>', "QUEUE_BACKLOG, QUEUE_LABEL =>"))
    check(any("label" in x for x in unread["problems"]),
          "negative: a label whose name is not a string literal is refused (its dimension cannot be read)")
    clash = with_source(drain, lambda t: t.replace('QUEUE_BACKLOG, "Queue" =>', 'QUEUE_BACKLOG, "Service" =>'))
    check(any("default dimension" in x for x in clash["problems"]),
          "negative: a label named like the default dimension (Service) is refused")

    def body_edit(fn):
        bad = copy.deepcopy(tpl)
        parts = bad["Resources"][dash]["Properties"]["DashboardBody"]["Fn::Join"][1]
        fn(bad, parts)
        return evaluate(bad, code)

    def add_line(bad, parts):
        parts.insert(-1, '{"type":"metric","x":0,"y":40,"width":6,"height":6,"properties":{"metrics":'
                         '[["SqsForwarder","MessagesLost","Service","kinesis-to-sqs"]]}},')
    check(body_edit(add_line).get("emitted"), "negative: a metric the code does not emit fails the emitted check")

    def wrong_dim(bad, parts):
        parts.insert(-1, '{"type":"metric","x":0,"y":40,"width":6,"height":6,"properties":{"metrics":'
                         '[["SqsForwarder","MessagesIn","FunctionName","kinesis-to-sqs"]]}},')
    check(body_edit(wrong_dim).get("emitted"), "negative: a dimension the code does not emit fails the emitted check")

    def aws_unknown(bad, parts):
        parts.insert(-1, '{"type":"metric","x":0,"y":40,"width":6,"height":6,"properties":{"metrics":'
                         '[["AWS/SQS","ApproximateNumberOfMessagesVisible","QueueName","orders"]]}},')
    check(body_edit(aws_unknown).get("aws"), "negative: an AWS metric of a queue outside the stack fails the AWS check")

    def in_body(old, new):
        """An edit of the body: `old` (a regex) replaced by `new`; if it is
        not there, nothing changes and the negative test fails."""
        def edit(bad, parts):
            for part in parts:
                if isinstance(part, dict) and isinstance(part.get("Fn::Sub"), str):
                    part["Fn::Sub"] = re.sub(old, lambda _: new, part["Fn::Sub"])
        return edit

    search = """SEARCH('{SqsForwarder,Queue,Service} MetricName=\\"QueueBacklog\\" Service=\\"rabbitmq-to-sqs\\"',"""
    for old, new, what in (
            ('MetricName=\\"QueueBacklog\\"', 'MetricName=\\"QueueDepth\\"',
             "a SEARCH on a metric the code does not emit"),
            ("{SqsForwarder,Queue,Service}", "{SqsForwarder,QueueName,Service}",
             "a SEARCH on a schema (dimension set) the code does not emit for the metric"),
            ("{SqsForwarder,Queue,Service}", "{Forwarder,Queue,Service}", "a SEARCH in another namespace"),
            (' Service=\\"rabbitmq-to-sqs\\"', "", "a SEARCH naming no Service"),
            (search, "m1 * 2 + SEARCH(" + search[len("SEARCH("):], "an expression other than a plain SEARCH")):
        check(body_edit(in_body(re.escape(old), new)).get("emitted"), f"negative: {what} fails the emitted check")
    r = body_edit(in_body(r',\s*\[\{"expression":"' + re.escape(search) + r'[^\n]*\}\]', ""))
    check(any("QueueBacklog by Queue" in x for x in r.get("rows", [])) and not r.get("json"),
          "negative: QueueBacklog without its SEARCH by queue fails the row check")

    def math_alarm_edit(fn):
        def edit(bad, parts):
            fn(bad["Resources"]["RabbitmqToSqsBacklogGrowingAlarm"]["Properties"]["Metrics"])
        return edit

    def elsewhere(metrics):
        metrics[0]["MetricStat"]["Metric"]["Dimensions"] = [{"Name": "Service", "Value": "s3-to-sqs"}]

    def summed(metrics):
        metrics[1]["Expression"] = "SUM(backlog)"

    def two_results(metrics):
        metrics[0]["ReturnData"] = True
    for fn, want, what in ((elsewhere, "RabbitmqToSqsBacklogGrowingAlarm: its metric", "whose metric is on no graph"),
                           (summed, "not for alarms", "using SUM (not for alarms, the AWS docs say)"),
                           (two_results, "2 results", "with two results (ReturnData)")):
        check(any(want in x for x in body_edit(math_alarm_edit(fn)).get("alarms", [])),
              f"negative: a metric-math alarm {what} fails the alarm check")

    def broken_json(bad, parts):
        parts.insert(-1, '{"type":"metric",')
    check(body_edit(broken_json).get("json"), "negative: a body that is not JSON fails the JSON check")

    def no_duration(bad, parts):
        for i, part in enumerate(parts):
            if isinstance(part, dict) and isinstance(part.get("Fn::Sub"), str):
                part["Fn::Sub"] = re.sub(r',\s*\["AWS/Lambda","Duration","FunctionName","\$\{ApigwToSqsFunction\}"'
                                         r',\{[^}]*\}\]', "", part["Fn::Sub"])
    r = body_edit(no_duration)
    check(r.get("rows") and not r.get("json"),
          "negative: a function row without Lambda Duration fails the row check")

    def moved(bad, parts):
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("Fn::Sub"), str):
                part["Fn::Sub"] = re.sub(r'("x":16,"y":)18(,"width":8,"height":6,"properties":\{"title":"apigw-to-sqs)',
                                         r"\g<1>24\2", part["Fn::Sub"])
    r = body_edit(moved)
    check(r.get("rows"), "negative: a function's widget on another function's row fails the row check")

    def no_queue(bad, parts):
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("Fn::Sub"), str):
                part["Fn::Sub"] = part["Fn::Sub"].replace(
                    '"ApproximateAgeOfOldestMessage","QueueName","${FailureQueue',
                    '"ApproximateNumberOfMessagesNotVisible","QueueName","${FailureQueue')
    check(body_edit(no_queue).get("queues"), "negative: a queue without its oldest message's age fails the queue check")

    def extra_alarm(bad, parts):
        bad["Resources"]["UnseenAlarm"] = copy.deepcopy(bad["Resources"]["FailureQueueAlarm"])
    check(body_edit(extra_alarm).get("alarms"), "negative: an alarm not on the dashboard fails the alarm check")

    def overlap(bad, parts):
        parts.insert(-1, '{"type":"text","x":20,"y":0,"width":6,"height":2,"properties":{"markdown":"x"}},')
    check(body_edit(overlap).get("grid"), "negative: overlapping or off-grid widgets fail the grid check")

    bad = copy.deepcopy(tpl)
    bad["Outputs"] = {k: v for k, v in bad["Outputs"].items() if "Dashboard" not in json.dumps(v)}
    check(evaluate(bad, code).get("outputs"), "negative: no dashboard URL output fails the outputs check")
    bad = copy.deepcopy(tpl)
    bad["Outputs"] = {k: v for k, v in bad["Outputs"].items() if "PayloadBucket" not in json.dumps(v)}
    check(evaluate(bad, code).get("outputs"), "negative: no payload bucket output (offload on) fails the outputs check")
    for gone, what in (("FailureQueue", "the on-failure queue's URL"), ("HttpApi", "the HTTP endpoint")):
        bad = copy.deepcopy(tpl)
        bad["Outputs"] = {k: v for k, v in bad["Outputs"].items() if gone not in json.dumps(v)}
        check(any(gone in x for x in evaluate(bad, code).get("outputs", [])),
              f"negative: no output with {what} fails the outputs check")
    bad = copy.deepcopy(tpl)
    bad["Outputs"]["UndocumentedOutput"] = {"Value": "x"}
    bad["Resources"]["UndocumentedAlarm"] = copy.deepcopy(bad["Resources"]["FailureQueueAlarm"])
    found = doc_matches(bad, root)
    check(any("UndocumentedOutput" in x for x in found) and any("UndocumentedAlarm" in x for x in found),
          f"negative: an output and an alarm {DOC} does not name fail the document check")
    doc = read_doc(root)
    check(any("FailureQueueAlarm" in x for x in doc_matches(tpl, root, doc.replace("`FailureQueueAlarm`", ""))),
          f"negative: {DOC} without FailureQueueAlarm in its alarm table fails the document check")
    check(any("Which alarm fires" in x for x in guide_matches(tpl, root, doc.replace(
        ALARMS_HEADING, "## When an alarm fires"))),
          f"negative: the dashboard naming a section {DOC} does not have fails the reading-order check")
    swapped = doc.replace("1. **Alarms**", "1. **Queues**", 1)
    check(any("steps" in x for x in guide_matches(tpl, root, swapped)),
          f"negative: {DOC} and the dashboard reading the steps in another order fails the reading-order check")

    def readme_wording(bad, parts):
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("Fn::Sub"), str):
                part["Fn::Sub"] = part["Fn::Sub"].replace(f"{DOC}, *Which alarm", "the README's *Which alarm")
    bad = copy.deepcopy(tpl)
    readme_wording(bad, bad["Resources"][dash]["Properties"]["DashboardBody"]["Fn::Join"][1])
    check(any("names the README's" in x for x in guide_matches(bad, root)),
          "negative: the dashboard naming a README section (the sections are in "
          f"{DOC}) fails the reading-order check")
