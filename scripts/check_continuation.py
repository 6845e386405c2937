"""Check the template's continuation of s3-to-sqs (S3Continuation), offline.

* off by default: the function's policy grants no lambda:InvokeFunction and
  its CONTINUATION is "false";
* with S3Mode=lines and S3Continuation=true: the function is named
  <stack>-s3-to-sqs, its policy grants lambda:InvokeFunction on that one ARN
  and nothing else (no wildcard, no other function), CONTINUATION is "true"
  and CONTINUATION_BUCKETS names the input bucket the function may read;
* a rule refuses S3Continuation=true without S3Mode=lines (the function
  would refuse to start);
* negative tests: each check fails on a template that breaks it.

run(tpl, check) is called by scripts/check_template.py.
"""

import copy

from check_distributed_map import evaluate, grants, with_params

FUNCTION = "S3ToSqsFunction"
OWN_ARN = "arn:aws:lambda:us-east-1:123456789012:function:stack-s3-to-sqs"
INPUT = "stack-123456789012-us-east-1-input"


def invoke_grants(tpl):
    return {r for a, r in grants(tpl, FUNCTION) if a in ("lambda:InvokeFunction", "lambda:*", "*")}


def env(tpl):
    props = tpl["Resources"][FUNCTION]["Properties"]
    return evaluate(tpl, props.get("Environment", {})).get("Variables", {})


def off_problems(tpl):
    p = []
    if invoke_grants(tpl):
        p.append(f"lambda:InvokeFunction granted by default: {sorted(invoke_grants(tpl))}")
    if env(tpl).get("CONTINUATION") != "false":
        p.append(f"CONTINUATION by default is {env(tpl).get('CONTINUATION')!r}")
    return p


def on_problems(tpl):
    t = with_params(tpl, {"S3Mode": "lines", "S3Continuation": "true"})
    p = []
    if invoke_grants(t) != {OWN_ARN}:
        p.append(f"lambda:InvokeFunction on {sorted(invoke_grants(t))}, not exactly {OWN_ARN}")
    name = evaluate(t, t["Resources"][FUNCTION]["Properties"].get("FunctionName"))
    if not (isinstance(name, str) and name and OWN_ARN.endswith(":function:" + name)):
        p.append(f"the function is named {name!r}, not the name its policy grants")
    e = env(t)
    if e.get("CONTINUATION") != "true":
        p.append(f"CONTINUATION is {e.get('CONTINUATION')!r}")
    if e.get("CONTINUATION_BUCKETS") != INPUT:
        p.append(f"CONTINUATION_BUCKETS is {e.get('CONTINUATION_BUCKETS')!r}, not the input bucket")
    if ("s3:GetObject", f"arn:aws:s3:::{INPUT}/*") not in grants(t, FUNCTION):
        p.append("no s3:GetObject on the input bucket's objects")
    return p


def rule_problems(tpl):
    for rule in tpl.get("Rules", {}).values():
        cond = rule.get("RuleCondition", {})
        asserts = rule.get("Assertions", [])
        if cond == {"Fn::Equals": [{"Ref": "S3Continuation"}, "true"]} and any(
                a.get("Assert") == {"Fn::Equals": [{"Ref": "S3Mode"}, "lines"]} for a in asserts):
            return []
    return ["no rule refuses S3Continuation=true without S3Mode=lines"]


def policy_statement(tpl):
    """The continuation's statement in the function's policy (for the negatives)."""
    for st in tpl["Resources"][FUNCTION]["Properties"]["Policies"][0]["Statement"]:
        if isinstance(st, dict) and "Fn::If" in st and st["Fn::If"][0] == "IsS3Continuation":
            return st["Fn::If"][1]
    return None


def run(tpl, check):
    p = off_problems(tpl)
    check(not p, "continuation: off by default (no lambda:InvokeFunction, CONTINUATION=false)" + (f": {p}" if p else ""))
    p = on_problems(tpl)
    check(not p, "continuation: on, lambda:InvokeFunction on the function itself only, its name, its variables" + (f": {p}" if p else ""))
    p = rule_problems(tpl)
    check(not p, "continuation: a rule refuses S3Continuation=true without S3Mode=lines" + (f": {p}" if p else ""))

    bad = copy.deepcopy(tpl)
    st = policy_statement(bad)
    check(st is not None, "negative: the continuation's policy statement found")
    if st is not None:
        st["Resource"] = "*"
        check(on_problems(bad), "negative: lambda:InvokeFunction on * fails the continuation check")
        st["Resource"] = {"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:other"}
        check(on_problems(bad), "negative: lambda:InvokeFunction on another function fails the continuation check")
    bad = copy.deepcopy(tpl)
    bad["Resources"][FUNCTION]["Properties"].pop("FunctionName", None)
    check(on_problems(bad), "negative: an unnamed function (its ARN unknown to its policy) fails the continuation check")
    bad = copy.deepcopy(tpl)
    bad["Rules"] = {k: v for k, v in bad.get("Rules", {}).items()
                    if "S3Continuation" not in str(v.get("RuleCondition"))}
    check(rule_problems(bad), "negative: without the rule the continuation check fails")
