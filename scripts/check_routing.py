"""The routing parameters of template.yaml (issue 27), checked on what a
deployment gets: the template translated by SAM (so the roles and the
environments are the ones SAM generates, Globals merged in), then rendered
(scripts/template_render.py) with the parameters empty and set.

Used by scripts/check_template.py.

* RouteTargetQueueArns: set to two queue ARNs, every function's role grants
  `sqs:SendMessage`, `sqs:GetQueueAttributes` and `sqs:GetQueueUrl` on
  exactly those two more than it does without them, and nothing else
  changes (so no `*`); RouteKmsKeyArns likewise with `kms:GenerateDataKey`
  and `kms:Decrypt` on two keys.
* The replay command's policy (ReplayPolicy) likewise: with
  RouteTargetQueueArns (RouteKmsKeyArns) set, the same actions on exactly
  those queues (keys) more, nothing else, since the replay sends where the
  functions send.
* With both lists empty (the defaults), no statement of any function's role
  nor of ReplayPolicy has an empty resource: the grants above are left out,
  not given on `""`.
* KinesisRoutes, S3Routes, ApiRoutes, RabbitMqRoutes (ROUTES_OF): each
  function's environment has `ROUTES`, the document exactly as its own
  parameter gives it, when that parameter is set, and no `ROUTES` when it
  is empty, whatever the other three are (a document offering one
  function's source keys stops the others' start); every function has one.
* KinesisFilterPattern: the Kinesis event source mapping has
  `FilterCriteria` with one filter, the pattern exactly as given, when it
  is set, and none when it is empty.
* ApiRoutedPath (scripts/check_routed_path.py): no route on it when empty;
  when set, the HTTP API has the route `POST <ApiRoutedPath>` to the
  messages route's integration, with the messages route's authorization
  under every ApiAuth; and a template rule refuses it without ApiRoutes
  (another function's Routes parameter does not do).
* Every parameter is in one of the console's parameter groups.
* docs/operating.md's routing table names the routing parameters with
  their defaults, each Routes parameter's row naming its function.
* negative tests: each check fails on a copy of the template without the
  line it checks (a function's statement left out, a statement made
  unconditional or on `*`; a function's `ROUTES` left out, always set,
  from another function's parameter, or one `ROUTES` for all in Globals;
  the filter left out, always set or with another pattern; the routed
  route always there, open, or the rule on another parameter or gone; a
  parameter outside the groups; a default the docs do not give).
"""

import copy
import json
import os
import re

import check_routed_path
from template_render import Stack

QUEUES = ["arn:aws:sqs:eu-west-1:222222222222:orders-eu",
          "arn:aws:sqs:us-east-1:111122223333:audit.fifo"]
KEYS = ["arn:aws:kms:eu-west-1:222222222222:key/11111111-1111-1111-1111-111111111111",
        "arn:aws:kms:us-east-1:111122223333:key/22222222-2222-2222-2222-222222222222"]
SQS_ACTIONS = ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")
KMS_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")
GRANTS = [
    # (parameter, values, actions, the condition of its statement)
    ("RouteTargetQueueArns", QUEUES, SQS_ACTIONS, "HasRouteTargets"),
    ("RouteKmsKeyArns", KEYS, KMS_ACTIONS, "HasRouteKmsKeys"),
]
EU = '{"eu": "https://sqs.eu-west-1.amazonaws.com/222222222222/orders-eu"}'
# function: (its parameter, its crate, a document on its own source keys).
ROUTES_OF = {
    "KinesisToSqsFunction": ("KinesisRoutes", "kinesis-to-sqs",
                             '{"targets": %s, "routes": [{"when": {"key": "partition_key", '
                             '"prefix": "eu-"}, "target": "eu"}]}' % EU),
    "S3ToSqsFunction": ("S3Routes", "s3-to-sqs",
                        '{"targets": %s, "routes": [{"when": {"key": "bucket", '
                        '"equals": "eu-exports"}, "target": "eu"}]}' % EU),
    "ApigwToSqsFunction": ("ApiRoutes", "apigw-to-sqs",
                           '{"targets": %s, "routes": [{"path": "/queues/{name}/messages"}]}' % EU),
    "RabbitmqToSqsFunction": ("RabbitMqRoutes", "rabbitmq-to-sqs",
                              '{"targets": %s, "routes": [{"when": {"key": "routing_key", '
                              '"prefix": "eu."}, "target": "eu"}]}' % EU),
}
PATTERN = '{"data": {"type": ["order"]}}'
DOC = "docs/operating.md"
HEADING = "## Routing to several queues"


def functions(tpl):
    return [n for n, r in tpl.get("Resources", {}).items() if r.get("Type") == "AWS::Serverless::Function"]


def as_list(x):
    return x if isinstance(x, list) else [x]


def grants(out, overrides):
    """{function: {(action, resource)}} that its generated role allows, and
    the statements with an empty resource, for one set of parameters."""
    stack = Stack(out, overrides)
    res = out["Resources"]
    found, empty = {}, []
    for name, r in res.items():
        if r.get("Type") != "AWS::Lambda::Function":
            continue
        role = r["Properties"]["Role"]["Fn::GetAtt"][0]
        pairs = set()
        for policy in stack.render(res[role]["Properties"].get("Policies", [])):
            for st in as_list(policy.get("PolicyDocument", {}).get("Statement", [])):
                resources = as_list(st.get("Resource", []))
                if not resources or any(x in ("", None) for x in resources):
                    empty.append(f"{name}: {st.get('Action')} on {st.get('Resource')!r}")
                if st.get("Effect") == "Allow":
                    pairs |= {(a, x) for a in as_list(st.get("Action", [])) for x in resources}
        found[name] = pairs
    return found, empty


def grant_problems(out, param, values, actions):
    """With `param` set to `values`, what each role allows beyond or short of
    its default grants plus `actions` on exactly `values`."""
    base, _ = grants(out, {})
    more, _ = grants(out, {param: list(values)})
    problems = []
    for fn in sorted(base):
        want = base[fn] | {(a, v) for a in actions for v in values}
        if more[fn] != want:
            problems.append(f"{fn}: missing {sorted(want - more[fn])}, extra {sorted(more[fn] - want)}")
    return problems


def empty_problems(out):
    return grants(out, {})[1]


def replay_grants(out, overrides):
    """{(action, resource)} the replay command's policy (ReplayPolicy)
    allows, and its statements with an empty resource, for one set of
    parameters."""
    stack = Stack(out, overrides)
    doc = stack.render(out["Resources"]["ReplayPolicy"]["Properties"]["PolicyDocument"])
    pairs, empty = set(), []
    for st in as_list(doc.get("Statement", [])):
        resources = as_list(st.get("Resource", []))
        if not resources or any(x in ("", None) for x in resources):
            empty.append(f"ReplayPolicy: {st.get('Action')} on {st.get('Resource')!r}")
        if st.get("Effect") == "Allow":
            pairs |= {(a, x) for a in as_list(st.get("Action", [])) for x in resources}
    return pairs, empty


def replay_grant_problems(out, param, values, actions):
    """With `param` set to `values`, what ReplayPolicy allows beyond or short
    of its default grants plus `actions` on exactly `values` (the replay
    sends where the functions send)."""
    base, _ = replay_grants(out, {})
    more, _ = replay_grants(out, {param: list(values)})
    want = base | {(a, v) for a in actions for v in values}
    if more == want:
        return []
    return [f"ReplayPolicy: missing {sorted(want - more)}, extra {sorted(more - want)}"]


def environments(out, overrides):
    stack = Stack(out, overrides)
    return {n: stack.render(r["Properties"].get("Environment", {})).get("Variables", {})
            for n, r in out["Resources"].items() if r.get("Type") == "AWS::Lambda::Function"}


def routes_problems(tpl, out):
    """Each function's ROUTES comes from its own parameter, as given, only
    when that is set; never from another function's."""
    problems = [f"{fn}: a function with no Routes parameter of its own"
                for fn in functions(tpl) if fn not in ROUTES_OF]
    problems += [f"{fn}: no such function" for fn in ROUTES_OF if fn not in functions(tpl)]
    problems += [f"{n}: ROUTES={v.get('ROUTES')!r} with every Routes parameter empty"
                 for n, v in environments(out, {}).items() if "ROUTES" in v]
    for owner, (param, _, doc) in ROUTES_OF.items():
        for n, v in environments(out, {param: doc}).items():
            want = doc if n == owner else None
            if v.get("ROUTES") != want:
                problems.append(f"{n}: ROUTES={v.get('ROUTES')!r} with only {param} set, not {want!r}")
    every = {param: doc for param, _, doc in ROUTES_OF.values()}
    for n, v in environments(out, every).items():
        if n in ROUTES_OF and v.get("ROUTES") != ROUTES_OF[n][2]:
            problems.append(f"{n}: ROUTES={v.get('ROUTES')!r} with all four set, not {ROUTES_OF[n][0]}'s")
    return problems


def mappings(out, overrides):
    stack = Stack(out, overrides)
    return {n: stack.render(r.get("Properties", {})) for n, r in stack.resources.items()
            if r.get("Type") == "AWS::Lambda::EventSourceMapping"
            and "KinesisToSqsFunction" in json.dumps(r.get("Properties", {}).get("FunctionName"))}


def filter_problems(out):
    """The Kinesis mapping filters with the pattern given, only when given."""
    problems = []
    empty = mappings(out, {})
    if not empty:
        return ["no event source mapping for KinesisToSqsFunction"]
    problems += [f"{n}: FilterCriteria {p['FilterCriteria']} with KinesisFilterPattern empty"
                 for n, p in empty.items() if "FilterCriteria" in p]
    want = {"Filters": [{"Pattern": PATTERN}]}
    problems += [f"{n}: FilterCriteria {p.get('FilterCriteria')}, not {want}"
                 for n, p in mappings(out, {"KinesisFilterPattern": PATTERN}).items()
                 if p.get("FilterCriteria") != want]
    return problems


def group_problems(tpl):
    """Parameters in no console group, or in several."""
    groups = (tpl.get("Metadata", {}).get("AWS::CloudFormation::Interface", {}) or {}).get("ParameterGroups", [])
    listed = [p for g in groups for p in g.get("Parameters", [])]
    problems = [f"{p} is in no parameter group" for p in tpl.get("Parameters", {}) if p not in listed]
    problems += [f"{p} is in {listed.count(p)} groups" for p in sorted(set(listed)) if listed.count(p) > 1]
    problems += [f"{p} is grouped but no parameter" for p in sorted(set(listed)) if p not in tpl.get("Parameters", {})]
    return problems


def documented(root):
    """{parameter: (default cell, what it does)} of the table under HEADING in DOC."""
    text = open(os.path.join(root, *DOC.split("/")), encoding="utf-8").read()
    if HEADING not in text:
        return {}
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and re.fullmatch(r"`[A-Za-z0-9]+`", cells[1]):
            rows[cells[1].strip("`")] = (cells[2], "|".join(cells[3:]))
    return rows


def doc_problems(tpl, root):
    params = tpl.get("Parameters", {})
    wanted = [p for p in params if p.startswith("Route") or p.endswith("Routes")]
    wanted += ["KinesisFilterPattern", "ApiRoutedPath"]
    rows = documented(root)
    problems = [f"{p} is not in the table" for p in wanted if p not in rows]
    for p, (default, text) in rows.items():
        if p not in params:
            problems.append(f"{p} is no parameter of the template")
        elif default != ("(none)" if params[p].get("Default", "") == "" else f"`{params[p]['Default']}`"):
            problems.append(f"{p}: default {default}, the template's is {params[p].get('Default')!r}")
    for param, crate, _ in ROUTES_OF.values():
        text = rows.get(param, ("", ""))[1]
        others = [c for _, c, _ in ROUTES_OF.values() if c != crate and c in text]
        if param in rows and (crate not in text or others):
            problems.append(f"{param}'s row names {others or 'not ' + crate}, not {crate} alone")
    return problems


def statement(tpl, fn, condition):
    """The list holding function `fn`'s statement under `condition`, and its index."""
    for policy in tpl["Resources"][fn]["Properties"]["Policies"]:
        stmts = policy.get("Statement", [])
        for i, st in enumerate(stmts):
            if isinstance(st, dict) and st.get("Fn::If", [None])[0] == condition:
                return stmts, i
    raise KeyError(f"{fn}: no statement under {condition}")


def run(tpl, root, check, translate):
    out = translate(tpl)
    fns = functions(tpl)
    for param, values, actions, _ in GRANTS:
        p = grant_problems(out, param, values, actions)
        check(not p, f"{param} set to two: every function's role ({len(fns)}) grants {', '.join(actions)} "
                     "on exactly those, nothing else changes" + (f": {p}" if p else ""))
    for param, values, actions, _ in GRANTS:
        p = replay_grant_problems(out, param, values, actions)
        check(not p, f"{param} set to two: the replay command's ReplayPolicy grants {', '.join(actions)} "
                     "on exactly those, nothing else changes" + (f": {p}" if p else ""))
    p = empty_problems(out) + replay_grants(out, {})[1]
    check(not p, "with RouteTargetQueueArns and RouteKmsKeyArns empty, no role and not ReplayPolicy has a "
                 "statement on an empty resource" + (f": {p}" if p else ""))
    p = routes_problems(tpl, out)
    check(not p, f"each function ({len(fns)}) has ROUTES exactly as its own parameter "
                 f"({', '.join(v[0] for v in ROUTES_OF.values())}) gives it when set, none when empty, "
                 "never another's" + (f": {p}" if p else ""))
    p = filter_problems(out)
    check(not p, "the Kinesis mapping has FilterCriteria with the pattern given when KinesisFilterPattern is "
                 "set, none when empty" + (f": {p}" if p else ""))
    check_routed_path.run(tpl, check, {fn: (param, doc) for fn, (param, _, doc) in ROUTES_OF.items()})
    p = group_problems(tpl)
    check(not p, "every parameter is in one console parameter group" + (f": {p}" if p else ""))
    p = doc_problems(tpl, root)
    check(not p, f"{DOC} ({HEADING[3:]}) documents the routing parameters with their defaults" +
          (f": {p}" if p else ""))
    negative_tests(tpl, root, check, translate)


def negative_tests(tpl, root, check, translate):
    """Each check above fails on a copy without the line it checks."""
    for param, values, actions, condition in GRANTS:
        for fn in functions(tpl):
            bad = copy.deepcopy(tpl)
            stmts, i = statement(bad, fn, condition)
            del stmts[i]
            check(grant_problems(translate(bad), param, values, actions),
                  f"negative: {fn} without its {condition} statement fails the {param} check")
        fn = functions(tpl)[0]
        bad = copy.deepcopy(tpl)
        stmts, i = statement(bad, fn, condition)
        stmts[i]["Fn::If"][1]["Resource"] = "*"
        check(grant_problems(translate(bad), param, values, actions),
              f"negative: {fn}'s {condition} statement on `*` fails the {param} check")
        bad = copy.deepcopy(tpl)
        stmts, i = statement(bad, fn, condition)
        stmts[i] = stmts[i]["Fn::If"][1]
        check(empty_problems(translate(bad)),
              f"negative: {fn}'s {condition} statement made unconditional fails the empty-resource check")
        bad = copy.deepcopy(tpl)
        stmts = bad["Resources"]["ReplayPolicy"]["Properties"]["PolicyDocument"]["Statement"]
        stmts[:] = [st for st in stmts if not (isinstance(st, dict) and st.get("Fn::If", [None])[0] == condition)]
        check(replay_grant_problems(translate(bad), param, values, actions),
              f"negative: ReplayPolicy without its {condition} statement fails the {param} check")
    routes_negative_tests(tpl, check, translate)
    mapping = [n for n, r in tpl["Resources"].items() if r.get("Type") == "AWS::Lambda::EventSourceMapping"][0]
    bad = copy.deepcopy(tpl)
    criteria = bad["Resources"][mapping]["Properties"].pop("FilterCriteria")
    check(filter_problems(translate(bad)), "negative: the Kinesis mapping without FilterCriteria fails the filter check")
    bad["Resources"][mapping]["Properties"]["FilterCriteria"] = criteria["Fn::If"][1]
    check(filter_problems(translate(bad)), "negative: FilterCriteria always set fails the filter check")
    bad["Resources"][mapping]["Properties"]["FilterCriteria"] = {
        "Fn::If": [criteria["Fn::If"][0], {"Filters": [{"Pattern": '{"data": {}}'}]}, {"Ref": "AWS::NoValue"}]}
    check(filter_problems(translate(bad)), "negative: FilterCriteria with another pattern fails the filter check")
    bad = copy.deepcopy(tpl)
    for g in bad["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]:
        g["Parameters"] = [p for p in g["Parameters"] if p != "S3Routes"]
    check(group_problems(bad), "negative: S3Routes in no parameter group fails the group check")
    bad = copy.deepcopy(tpl)
    bad["Parameters"]["RouteTargetQueueArns"]["Default"] = "arn:aws:sqs:us-east-1:111122223333:q"
    check(doc_problems(bad, root),
          "negative: a routing parameter whose default differs from the docs fails the docs check")
    bad = copy.deepcopy(tpl)
    bad["Parameters"]["RabbitMqRoutes"]["Default"] = "{}"
    check(doc_problems(bad, root),
          "negative: a Routes parameter whose default differs from the docs fails the docs check")


def variables(tpl, fn):
    return tpl["Resources"][fn]["Properties"]["Environment"]["Variables"]


def routes_negative_tests(tpl, check, translate):
    """A function's ROUTES left out, always set, or from another function's
    parameter; and one ROUTES for all in Globals (the old template)."""
    fns = list(ROUTES_OF)
    for i, fn in enumerate(fns):
        param = ROUTES_OF[fn][0]
        other = ROUTES_OF[fns[(i + 1) % len(fns)]][0]
        bad = copy.deepcopy(tpl)
        variables(bad, fn).pop("ROUTES")
        check(routes_problems(bad, translate(bad)), f"negative: {fn} without ROUTES fails the ROUTES check")
        bad = copy.deepcopy(tpl)
        variables(bad, fn)["ROUTES"] = {"Ref": param}
        check(routes_problems(bad, translate(bad)),
              f"negative: {fn}'s ROUTES always set (empty) fails the ROUTES check")
        bad = copy.deepcopy(tpl)
        variables(bad, fn)["ROUTES"] = {"Fn::If": [f"Has{other}", {"Ref": other}, {"Ref": "AWS::NoValue"}]}
        check(routes_problems(bad, translate(bad)),
              f"negative: {fn}'s ROUTES from {other} fails the ROUTES check")
    bad = copy.deepcopy(tpl)
    for fn in fns:
        variables(bad, fn).pop("ROUTES")
    bad["Globals"]["Function"]["Environment"]["Variables"]["ROUTES"] = {
        "Fn::If": ["HasKinesisRoutes", {"Ref": "KinesisRoutes"}, {"Ref": "AWS::NoValue"}]}
    check(routes_problems(bad, translate(bad)),
          "negative: one ROUTES for every function in Globals fails the ROUTES check")
