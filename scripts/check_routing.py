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
* With both lists empty (the defaults), no statement of any function's role
  has an empty resource: the grants above are left out, not given on `""`.
* Routes: every function's environment has `ROUTES`, the document exactly
  as given, when it is set, and no `ROUTES` when it is empty.
* KinesisFilterPattern: the Kinesis event source mapping has
  `FilterCriteria` with one filter, the pattern exactly as given, when it
  is set, and none when it is empty.
* Every parameter is in one of the console's parameter groups.
* docs/operating.md's routing table names the routing parameters with
  their defaults.
* negative tests: each check fails on a copy of the template without the
  line it checks (a function's statement left out, a statement made
  unconditional or on `*`, `ROUTES` left out or always set, the filter left
  out, always set or with another pattern, a parameter outside the groups).
"""

import copy
import json
import os
import re

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
ROUTES = ('{"targets": {"eu": "https://sqs.eu-west-1.amazonaws.com/222222222222/orders-eu"}, '
          '"routes": [{"when": {"field": "/region", "prefix": "eu-"}, "target": "eu"}]}')
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


def environments(out, overrides):
    stack = Stack(out, overrides)
    return {n: stack.render(r["Properties"].get("Environment", {})).get("Variables", {})
            for n, r in out["Resources"].items() if r.get("Type") == "AWS::Lambda::Function"}


def routes_problems(out):
    """ROUTES reaches every function, as given, only when Routes is set."""
    problems = [f"{n}: ROUTES={v.get('ROUTES')!r} with Routes empty"
                for n, v in environments(out, {}).items() if "ROUTES" in v]
    problems += [f"{n}: ROUTES={v.get('ROUTES')!r}, not the document given"
                 for n, v in environments(out, {"Routes": ROUTES}).items() if v.get("ROUTES") != ROUTES]
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
    """{parameter: default cell} of the table under HEADING in DOC."""
    text = open(os.path.join(root, *DOC.split("/")), encoding="utf-8").read()
    if HEADING not in text:
        return {}
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and re.fullmatch(r"`[A-Za-z0-9]+`", cells[1]):
            rows[cells[1].strip("`")] = cells[2]
    return rows


def doc_problems(tpl, root):
    params = tpl.get("Parameters", {})
    wanted = [p for p in params if p.startswith("Route")] + ["KinesisFilterPattern"]
    rows = documented(root)
    problems = [f"{p} is not in the table" for p in wanted if p not in rows]
    for p, default in rows.items():
        if p not in params:
            problems.append(f"{p} is no parameter of the template")
        elif default != ("(none)" if params[p].get("Default", "") == "" else f"`{params[p]['Default']}`"):
            problems.append(f"{p}: default {default}, the template's is {params[p].get('Default')!r}")
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
    p = empty_problems(out)
    check(not p, "with RouteTargetQueueArns and RouteKmsKeyArns empty, no role has a statement on an "
                 "empty resource" + (f": {p}" if p else ""))
    p = routes_problems(out)
    check(not p, "ROUTES is in every function's environment as given when Routes is set, absent when empty" +
          (f": {p}" if p else ""))
    p = filter_problems(out)
    check(not p, "the Kinesis mapping has FilterCriteria with the pattern given when KinesisFilterPattern is "
                 "set, none when empty" + (f": {p}" if p else ""))
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
    env = ["Globals", "Function", "Environment", "Variables"]
    bad = copy.deepcopy(tpl)
    variables = bad
    for k in env:
        variables = variables[k]
    variables.pop("ROUTES")
    check(routes_problems(translate(bad)), "negative: no ROUTES in Globals fails the ROUTES check")
    variables["ROUTES"] = {"Ref": "Routes"}
    check(routes_problems(translate(bad)), "negative: ROUTES always set (empty) fails the ROUTES check")
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
        g["Parameters"] = [p for p in g["Parameters"] if p != "Routes"]
    check(group_problems(bad), "negative: Routes in no parameter group fails the group check")
    bad = copy.deepcopy(tpl)
    bad["Parameters"]["RouteTargetQueueArns"]["Default"] = "arn:aws:sqs:us-east-1:111122223333:q"
    check(doc_problems(bad, root),
          "negative: a routing parameter whose default differs from the docs fails the docs check")
