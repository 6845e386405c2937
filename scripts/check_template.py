#!/usr/bin/env python3
"""Check what cfn-lint does not about template.yaml.

* every function's CodeUri is a crate of the workspace, with a binary named
  after it (what `sam build` with cargo-lambda builds);
* every environment variable a function is given is one the code reads
  (the shared table in docs/configuration.md or a section of it named for
  the variable, as the heading "## Routing rules (`ROUTES`)", or the function's own
  table in functions/<name>/README.md), and the target queue is always given;
* every !Ref / !GetAtt / ${...} names a resource, a parameter or a pseudo
  parameter;
* runtime, architecture and build method are the ones this project builds for;
* no IAM statement of a function allows a `*` action or resource for SQS, S3,
  KMS or Secrets Manager;
* with the parameters' defaults, no HTTP API route or function URL is open
  without auth (AuthorizationType / AuthType NONE);
* the roles SAM generates (the template translated offline with
  samtranslator) attach no managed policy but AWSLambdaBasicExecutionRole
  (logs) and allow no `*` or account-wide (`<type>/*`) resource;
* the RabbitMQ poller drains one at a time: reserved concurrency 1, no
  asynchronous retries, no scheduler retries, a schedule name unique per
  stack;
* apigw-to-sqs's timeout plus Lambda's 10 s init limit leaves a margin of
  at least 2 s under the API Gateway integration timeout;
* every S3 invoke permission names its bucket (`SourceArn`);
* with `KmsKeyArn`, every queue and the payload bucket use that key; every
  bucket refuses requests without TLS; the created stream's retention is a
  parameter;
* checkov finds nothing unsuppressed (with the defaults, and with offload
  and a KMS key), and every suppression in the template has a reason;
* negative tests: every check above fails on a mutated copy of the template
  (a `sqs:*` action, a `*` resource, an open route, SAM's Kinesis and S3
  events, a poller without reserved concurrency, ...), so a check that
  passes everything is caught;
* the dashboard and the outputs (scripts/check_dashboard.py): every metric
  on the dashboard is one the code emits, with the namespace and dimensions
  it emits them with (read from the Rust source), one row per function,
  every queue and every alarm on it, the outputs a user needs, the
  dashboard's reading order docs/operating.md's; each with its negative tests;
* the routing parameters (scripts/check_routing.py): the grants on
  RouteTargetQueueArns and RouteKmsKeyArns, exactly and only when given,
  each function's ROUTES from its own parameter (KinesisRoutes, S3Routes,
  ApiRoutes, RabbitMqRoutes) and the Kinesis mapping's FilterCriteria only
  when set, ApiRoutedPath's route and its rule (scripts/check_routed_path.py),
  every parameter in a console group, the routing parameters documented;
  each with its negative tests;
* continuation (scripts/check_continuation.py): off by default; with it on,
  lambda:InvokeFunction on the function itself only, its name and variables,
  the rule that wants lines mode; each with its negative tests;
* the Distributed Map (scripts/check_distributed_map.py): off by default;
  with it on, cfn-lint, SAM's translator and asl-validator (the state
  machine's definition, rendered) pass, the definition is what s3-to-sqs
  reads, the roles grant exactly what the map needs; each with its negative
  tests;
* the replay command's policy (ReplayPolicy) grants exactly the actions its
  README lists under "Permissions", none with a `*` action or resource (with
  negative tests: an extra action, a `*` resource).

Prints one line per check and a closing "N passed, N failed" line.
Uses cfn-lint's own YAML loader (from the tools virtualenv).
"""

import copy
import json
import os
import re
import subprocess
import sys

from cfnlint.decode import cfn_yaml

import check_dashboard  # noqa: E402
import check_continuation  # noqa: E402
import check_distributed_map  # noqa: E402
import check_routing  # noqa: E402
from checks import Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PSEUDO = {"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition",
          "AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix"}

CHECKS = Checks("template")
check = CHECKS.check


def table_vars(path, section=None):
    text = open(path, encoding="utf-8").read()
    if section:
        text = text.split(section, 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\| `([A-Z][A-Z0-9_]*)` \|", text, re.M)]


def heading_vars(path):
    """Variables documented in a section of their own: a heading that names
    one, e.g. "## Routing rules (`ROUTES`)"."""
    text = open(path, encoding="utf-8").read()
    return re.findall(r"^#+ .*\(`([A-Z][A-Z0-9_]*)`\)\s*$", text, re.M)


def walk(node, fn):
    fn(node)
    if isinstance(node, dict):
        for v in node.values():
            walk(v, fn)
    elif isinstance(node, list):
        for v in node:
            walk(v, fn)


def main():
    tpl = cfn_yaml.load(os.path.join(ROOT, "template.yaml"))
    resources = tpl.get("Resources", {})
    params = tpl.get("Parameters", {})
    names = set(resources) | set(params) | PSEUDO
    configuration = os.path.join(ROOT, "docs", "configuration.md")
    shared_vars = set(table_vars(configuration, "## Configuration")) | set(heading_vars(configuration))
    check(shared_vars, f"docs/configuration.md documents {len(shared_vars)} shared variables")
    globals_env = (tpl.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))

    # References.
    bad = []

    def refs(node):
        if not isinstance(node, dict) or len(node) != 1:
            return
        (k, v), = node.items()
        if k == "Ref" and isinstance(v, str) and v not in names:
            bad.append(f"!Ref {v}")
        elif k == "Fn::GetAtt":
            target = v[0] if isinstance(v, list) else str(v).split(".")[0]
            if target not in resources:
                bad.append(f"!GetAtt {target}")
        elif k == "Fn::Sub":
            s = v[0] if isinstance(v, list) else v
            local = set(v[1]) if isinstance(v, list) and len(v) > 1 else set()
            for var in re.findall(r"\$\{([^}!]+)\}", s):
                base = var.split(".")[0]
                if base not in names and base not in local:
                    bad.append(f"${{{var}}} in !Sub")
        elif k == "Condition" and isinstance(v, str) and v not in tpl.get("Conditions", {}):
            bad.append(f"Condition {v}")

    walk(tpl, refs)
    check(not bad, "every !Ref, !GetAtt and ${} names a resource or parameter" + (f": {bad}" if bad else ""))

    members = open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8").read()
    functions = {n: r for n, r in resources.items() if r.get("Type") == "AWS::Serverless::Function"}
    check(functions, f"{len(functions)} functions in the template")
    g = tpl.get("Globals", {}).get("Function", {})
    for name, res in functions.items():
        props = res.get("Properties", {})
        code = str(props.get("CodeUri", "")).rstrip("/")
        crate = os.path.basename(code)
        manifest = os.path.join(ROOT, code, "Cargo.toml")
        check(os.path.isfile(manifest) and f'"{code}"' in members,
              f"{name}: CodeUri {code} is a workspace crate")
        if os.path.isfile(manifest):
            text = open(manifest, encoding="utf-8").read()
            check(re.search(rf'^name = "{re.escape(crate)}"', text, re.M),
                  f"{name}: {code} builds a binary named {crate}")
        runtime = props.get("Runtime", g.get("Runtime"))
        arch = props.get("Architectures", g.get("Architectures"))
        check(runtime == "provided.al2023", f"{name}: runtime provided.al2023 ({runtime})")
        check(arch == ["arm64"], f"{name}: architecture arm64 ({arch})")
        check(props.get("Handler", g.get("Handler")) == "bootstrap", f"{name}: handler bootstrap")
        check(res.get("Metadata", {}).get("BuildMethod") == "rust-cargolambda",
              f"{name}: BuildMethod rust-cargolambda")
        env = dict(globals_env)
        env.update(props.get("Environment", {}).get("Variables", {}))
        own_readme = os.path.join(ROOT, code, "README.md")
        own = set(table_vars(own_readme)) if os.path.isfile(own_readme) else set()
        known = shared_vars | own | {"RUST_LOG"}
        unknown = sorted(k for k in env if k not in known)
        check(not unknown, f"{name}: every variable it is given is read by the code" +
              (f"; unknown: {unknown}" if unknown else ""))
        check("QUEUE_URL" in env or "QUEUE_NAME" in env, f"{name}: the target queue is given")

        # Least privilege.
        wild = wildcards(props)
        check(not wild, f"{name}: no wildcard SQS/S3/KMS/Secrets Manager permission" +
              (f": {wild}" if wild else ""))

    replay_policy(tpl)

    open_routes = unauthenticated(tpl)
    check(not open_routes, "the HTTP endpoint is not open without auth by default" +
          (f": {open_routes}" if open_routes else ""))

    hardening(tpl)
    negative_tests(tpl)
    check_dashboard.run(tpl, ROOT, check)
    check_routing.run(tpl, ROOT, check, sam_translate)
    check_distributed_map.run(tpl, ROOT, check, sam_translate)
    check_continuation.run(tpl, check)

    CHECKS.finish()


def wildcards(props):
    """The `*` actions and resources of SQS/S3/KMS/Secrets Manager statements
    in a function's Policies."""
    wild = []

    def stmts(node):
        if isinstance(node, dict) and "Effect" in node and "Action" in node:
            actions = node["Action"] if isinstance(node["Action"], list) else [node["Action"]]
            res_ = node.get("Resource", [])
            res_ = res_ if isinstance(res_, list) else [res_]
            for a in actions:
                if isinstance(a, str) and (a == "*" or a.endswith(":*")) and \
                        a.split(":")[0] in ("*", "sqs", "s3", "kms", "secretsmanager"):
                    wild.append(a)
            if any(isinstance(a, str) and a.split(":")[0] in ("sqs", "s3", "kms", "secretsmanager")
                   for a in actions) and any(r == "*" for r in res_):
                wild.append(f"{actions} on *")

    walk(props.get("Policies", []), stmts)
    return wild


def policy_statements(node):
    """Every statement of a policy document, both branches of each Fn::If."""
    found = []

    def visit(n):
        if isinstance(n, dict) and "Effect" in n and "Action" in n:
            found.append(n)

    walk(node, visit)
    return found


def replay_actions_documented():
    text = open(os.path.join(ROOT, "replay", "README.md"), encoding="utf-8").read()
    section = text.split("## Permissions", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`([a-z0-9]+:[A-Za-z]+)`", section))


def replay_policy_problems(tpl):
    """What is wrong with ReplayPolicy: missing, actions other than the
    documented ones, or wildcards."""
    res = tpl.get("Resources", {}).get("ReplayPolicy")
    if not res or res.get("Type") != "AWS::IAM::ManagedPolicy":
        return ["no AWS::IAM::ManagedPolicy ReplayPolicy"]
    problems = []
    granted = set()
    for st in policy_statements(res.get("Properties", {}).get("PolicyDocument", {})):
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        resources = st.get("Resource", [])
        resources = resources if isinstance(resources, list) else [resources]
        for a in actions:
            if not isinstance(a, str) or "*" in a:
                problems.append(f"wildcard action {a}")
            else:
                granted.add(a)
        if any(r == "*" for r in resources):
            problems.append(f"{actions} on *")
    documented = replay_actions_documented()
    if granted != documented:
        problems.append(f"granted {sorted(granted - documented)} not in replay/README.md, "
                        f"documented {sorted(documented - granted)} not granted")
    return problems


def replay_policy(tpl):
    problems = replay_policy_problems(tpl)
    check(not problems, "ReplayPolicy grants what replay/README.md lists, no wildcard" +
          (f": {problems}" if problems else ""))


def resolve(tpl, node):
    """A value as deployed with every parameter at its default: Ref to a
    parameter, Fn::If, Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition."""
    params = tpl.get("Parameters", {})
    conditions = tpl.get("Conditions", {})
    if isinstance(node, dict) and len(node) == 1:
        (k, v), = node.items()
        if k == "Ref" and v in params:
            return params[v].get("Default")
        if k == "Condition":
            return resolve(tpl, conditions.get(v))
        if k == "Fn::If":
            cond, yes, no = v
            return resolve(tpl, yes if resolve(tpl, conditions.get(cond)) else no)
        if k == "Fn::Equals":
            return resolve(tpl, v[0]) == resolve(tpl, v[1])
        if k == "Fn::Not":
            return not resolve(tpl, v[0])
        if k == "Fn::And":
            return all(resolve(tpl, c) for c in v)
        if k == "Fn::Or":
            return any(resolve(tpl, c) for c in v)
    return node


def unauthenticated(tpl):
    """Routes and function URLs open without auth, with the default parameters."""
    found = []
    for name, res in tpl.get("Resources", {}).items():
        props = res.get("Properties", {}) or {}
        kind = res.get("Type")
        if kind == "AWS::ApiGatewayV2::Route":
            auth = resolve(tpl, props.get("AuthorizationType", "NONE"))
            if auth in (None, "NONE"):
                found.append(f"{name} ({resolve(tpl, props.get('RouteKey'))}) AuthorizationType {auth}")
        elif kind == "AWS::Lambda::Url":
            if resolve(tpl, props.get("AuthType")) == "NONE":
                found.append(f"{name} AuthType NONE")
        elif kind == "AWS::Serverless::Function":
            url = props.get("FunctionUrlConfig")
            if url is not None and resolve(tpl, url.get("AuthType")) == "NONE":
                found.append(f"{name} FunctionUrlConfig AuthType NONE")
        elif kind == "AWS::Serverless::HttpApi":
            auth = (props.get("Auth") or {}).get("DefaultAuthorizer")
            if auth is None or resolve(tpl, auth) == "NONE":
                found.append(f"{name} has no DefaultAuthorizer")
    return found


def negative_tests(tpl):
    """The checks fail on templates that break them."""
    import copy

    functions = [n for n, r in tpl.get("Resources", {}).items()
                 if r.get("Type") == "AWS::Serverless::Function"]
    mutations = [
        ("an sqs:* action", {"Effect": "Allow", "Action": "sqs:*",
                            "Resource": "arn:aws:sqs:us-east-1:123456789012:q"}),
        ("a * resource for s3:GetObject", {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "*"}),
        ("a * action", {"Effect": "Allow", "Action": ["*"], "Resource": ["arn:aws:kms:us-east-1:123456789012:key/k"]}),
        ("a * resource for secretsmanager:GetSecretValue",
         {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": ["*"]}),
        ("a kms:* action", {"Effect": "Allow", "Action": ["kms:*"], "Resource": "arn:aws:kms:us-east-1:123456789012:key/k"}),
    ]
    for name in functions:
        for what, statement in mutations:
            bad = copy.deepcopy(tpl)
            props = bad["Resources"][name].setdefault("Properties", {})
            policies = props.get("Policies")
            policies = list(policies) if isinstance(policies, list) else ([policies] if policies else [])
            policies.append({"Statement": [statement]})
            props["Policies"] = policies
            check(wildcards(props), f"negative: {name} with {what} fails the wildcard check")
    for what, statement in [
        ("an extra action", {"Effect": "Allow", "Action": "kinesis:PutRecord",
                             "Resource": "arn:aws:kinesis:us-east-1:123456789012:stream/s"}),
        ("a * resource", {"Effect": "Allow", "Action": "kinesis:GetRecords", "Resource": "*"}),
        ("a sqs:* action", {"Effect": "Allow", "Action": ["sqs:*"],
                            "Resource": "arn:aws:sqs:us-east-1:123456789012:q"}),
    ]:
        bad = copy.deepcopy(tpl)
        doc = bad["Resources"]["ReplayPolicy"]["Properties"]["PolicyDocument"]
        doc["Statement"] = list(doc["Statement"]) + [statement]
        check(replay_policy_problems(bad), f"negative: ReplayPolicy with {what} fails its check")
    bad = copy.deepcopy(tpl)
    bad["Parameters"].setdefault("ApiAuth", {})["Default"] = "NONE"
    check(unauthenticated(bad), "negative: ApiAuth defaulting to NONE fails the auth check")
    bad = copy.deepcopy(tpl)
    routes = [n for n, r in bad["Resources"].items() if r.get("Type") == "AWS::ApiGatewayV2::Route"]
    for r in routes:
        bad["Resources"][r]["Properties"]["AuthorizationType"] = "NONE"
    check(routes and unauthenticated(bad), "negative: a route with AuthorizationType NONE fails the auth check")
    bad = copy.deepcopy(tpl)
    bad["Resources"]["OpenUrl"] = {"Type": "AWS::Lambda::Url", "Properties": {"AuthType": "NONE"}}
    check(unauthenticated(bad), "negative: a function URL with AuthType NONE fails the auth check")
    hardening_negative_tests(tpl)


# ---- hardening (issue 17) ---------------------------------------------------

BASIC_EXECUTION = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
KEY = "arn:aws:kms:us-east-1:111122223333:key/00000000-0000-0000-0000-000000000000"


def sam_translate(tpl):
    """The template as CloudFormation gets it from SAM (offline: code URIs
    and the region are placeholders; no managed policy is looked up)."""
    import logging

    from samtranslator.translator.transform import transform

    logging.disable(logging.WARNING)  # samtranslator's "unpublished metrics" notes
    class NoLookups:
        def load(self):
            return {}

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    t = json.loads(json.dumps(tpl))
    for r in t.get("Resources", {}).values():
        if r.get("Type") == "AWS::Serverless::Function":
            r.setdefault("Properties", {})["CodeUri"] = "s3://bucket/code.zip"
    return transform(t, {}, NoLookups())


def broad_resources(role):
    """Managed policies other than basic logging, and `*` or account-wide
    resources in a generated role's inline policies."""
    found = [f"managed policy {m}" for m in role.get("Properties", {}).get("ManagedPolicyArns", [])
             if m != BASIC_EXECUTION]

    def stmts(node):
        if isinstance(node, dict) and "Effect" in node and "Action" in node:
            res_ = node.get("Resource", [])
            for r in (res_ if isinstance(res_, list) else [res_]):
                if isinstance(r, str) and (r == "*" or re.fullmatch(r"arn:[^:]*:[^:]*:[^:]*:[^:]*:([a-z-]+/)?\*", r)):
                    found.append(f"{node['Action']} on {r}")

    walk(role.get("Properties", {}).get("Policies", []), stmts)
    return found


def generated_roles(tpl):
    out = sam_translate(tpl)
    return {n: broad_resources(r) for n, r in out["Resources"].items() if r.get("Type") == "AWS::IAM::Role"}


def roles_problems(tpl):
    return {n: f for n, f in generated_roles(tpl).items() if f}


def poller_problems(tpl):
    """What lets two RabbitMQ drains overlap, or two stacks share a schedule."""
    fn = tpl["Resources"].get("RabbitmqToSqsFunction", {}).get("Properties", {})
    found = []
    if fn.get("ReservedConcurrentExecutions") != 1:
        found.append(f"ReservedConcurrentExecutions {fn.get('ReservedConcurrentExecutions')}")
    if (fn.get("EventInvokeConfig") or {}).get("MaximumRetryAttempts") != 0:
        found.append("asynchronous retries not off (EventInvokeConfig.MaximumRetryAttempts)")
    schedules = [e for e in (fn.get("Events") or {}).values() if e.get("Type") in ("ScheduleV2", "Schedule")]
    if not schedules:
        found.append("no schedule")
    for e in schedules:
        props = e.get("Properties", {})
        if (props.get("RetryPolicy") or {}).get("MaximumRetryAttempts") != 0:
            found.append("scheduler retries not off")
        name = json.dumps(props.get("Name"))
        if "AWS::StackId" not in name and "AWS::StackName" not in name:
            found.append(f"schedule name {props.get('Name')} is not unique per stack")
    return found


def api_timeout_problems(tpl):
    """apigw-to-sqs must answer before API Gateway gives up, cold start included."""
    res = tpl["Resources"]
    g = tpl.get("Globals", {}).get("Function", {})
    timeout = res["ApigwToSqsFunction"]["Properties"].get("Timeout", g.get("Timeout", 3))
    found = []
    integrations = [r for r in res.values() if r.get("Type") == "AWS::ApiGatewayV2::Integration"
                    and "ApigwToSqsFunction" in json.dumps(r.get("Properties", {}).get("IntegrationUri"))]
    if not integrations:
        found.append("no integration")
    for r in integrations:
        limit = r["Properties"].get("TimeoutInMillis", 30000) / 1000
        if timeout + 10 + 2 > limit:
            found.append(f"Timeout {timeout} s + 10 s init + 2 s margin > {limit} s integration timeout")
    return found


def s3_permission_problems(tpl):
    out = sam_translate(tpl)
    return [n for n, r in out["Resources"].items()
            if r.get("Type") == "AWS::Lambda::Permission"
            and r["Properties"].get("Principal") == "s3.amazonaws.com"
            and not r["Properties"].get("SourceArn")]


def kms_problems(tpl):
    """With KmsKeyArn set, what holds message data and does not use the key."""
    t = copy.deepcopy(tpl)
    t["Parameters"]["KmsKeyArn"]["Default"] = KEY
    t["Parameters"]["OversizePolicy"]["Default"] = "offload"
    found = []
    for n, r in t["Resources"].items():
        props = r.get("Properties", {})
        if r.get("Type") == "AWS::SQS::Queue" and resolve(t, props.get("KmsMasterKeyId")) != KEY:
            found.append(f"{n}: KmsMasterKeyId is not the key")
    payload = t["Resources"].get("PayloadBucket", {}).get("Properties", {})
    rules = (payload.get("BucketEncryption") or {}).get("ServerSideEncryptionConfiguration", [])
    sse = [resolve(t, x) for x in rules]
    if not any(isinstance(x, dict) and x.get("ServerSideEncryptionByDefault", {}).get("SSEAlgorithm") == "aws:kms"
               and resolve(t, x["ServerSideEncryptionByDefault"].get("KMSMasterKeyID")) == KEY for x in sse):
        found.append("PayloadBucket: not SSE-KMS with the key")
    return found


def tls_problems(tpl):
    """Buckets without a policy that denies requests over plain HTTP."""
    res = tpl["Resources"]
    denied = set()
    for r in res.values():
        if r.get("Type") != "AWS::S3::BucketPolicy":
            continue
        bucket = r["Properties"].get("Bucket", {})
        doc = json.dumps(r["Properties"].get("PolicyDocument", {}))
        if '"Deny"' in doc and '"aws:SecureTransport": "false"' in doc and isinstance(bucket, dict):
            denied.add(bucket.get("Ref"))
    return [n for n, r in res.items() if r.get("Type") == "AWS::S3::Bucket" and n not in denied]


def retention_problems(tpl):
    stream = tpl["Resources"].get("Stream", {}).get("Properties", {})
    ref = (stream.get("RetentionPeriodHours") or {})
    p = tpl["Parameters"].get(ref.get("Ref", "") if isinstance(ref, dict) else "", {})
    if not p:
        return ["the stream's RetentionPeriodHours is not a parameter"]
    return [] if int(p.get("Default", 0)) > 24 else [f"retention defaults to {p.get('Default')} h"]


def checkov_skips_without_reason(tpl):
    found = []
    for n, r in tpl["Resources"].items():
        for skip in ((r.get("Metadata") or {}).get("checkov") or {}).get("skip", []):
            if not str(skip.get("comment", "")).strip():
                found.append(f"{n}: {skip.get('id')}")
    return found


CHECKOV = os.path.join(ROOT, ".local", "checkov", "bin", "checkov")


def checkov_failures(tpl, name):
    """checkov's failed checks on `tpl` (written to .local/<name>.yaml)."""
    import yaml

    path = os.path.join(ROOT, ".local", f"{name}.yaml")

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(type(tpl), lambda d, m: d.represent_dict(dict(m)))
    with open(path, "w", encoding="utf-8") as f:
        yaml.dump(json.loads(json.dumps(tpl)), f, Dumper=Dumper, sort_keys=False)
    run = subprocess.run([CHECKOV, "-f", path, "--framework", "cloudformation", "--compact", "--quiet",
                          "--skip-download", "-o", "json"], capture_output=True, text=True, timeout=600)
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        return [f"checkov did not run: {run.stderr.strip()[-300:]}"]
    report = report[0] if isinstance(report, list) else report
    if "results" not in report:
        return [] if report.get("failed", 0) == 0 else [str(report)]
    return [f"{r['check_id']} {r['resource']}" for r in report["results"].get("failed_checks", [])]


def offload_with_key(tpl):
    t = copy.deepcopy(tpl)
    t["Parameters"]["OversizePolicy"]["Default"] = "offload"
    t["Parameters"]["KmsKeyArn"]["Default"] = KEY
    return t


def hardening(tpl):
    problems = roles_problems(tpl)
    check(generated_roles(tpl) and not problems,
          "generated roles: no managed policy but basic logging, no `*` or account-wide resource" +
          (f": {problems}" if problems else ""))
    p = poller_problems(tpl)
    check(not p, "the RabbitMQ poller drains one at a time (reserved concurrency 1, no retries, a schedule name per stack)" + (f": {p}" if p else ""))
    p = api_timeout_problems(tpl)
    check(not p, "apigw-to-sqs answers before API Gateway's timeout, cold start included" + (f": {p}" if p else ""))
    p = s3_permission_problems(tpl)
    check(not p, "every S3 invoke permission names its bucket (SourceArn)" + (f": {p}" if p else ""))
    p = kms_problems(tpl)
    check(not p, "with KmsKeyArn, every queue and the payload bucket use the key" + (f": {p}" if p else ""))
    p = tls_problems(offload_with_key(tpl))
    check(not p, "every bucket refuses requests without TLS" + (f": {p}" if p else ""))
    p = retention_problems(tpl)
    check(not p, "the created stream's retention is a parameter, longer than a day by default" + (f": {p}" if p else ""))
    p = checkov_skips_without_reason(tpl)
    check(not p, "every checkov suppression gives its reason" + (f": {p}" if p else ""))
    if os.path.exists(CHECKOV):
        p = checkov_failures(tpl, "checkov-defaults")
        check(not p, "checkov: nothing unsuppressed with the defaults" + (f": {p}" if p else ""))
        p = checkov_failures(offload_with_key(tpl), "checkov-offload-kms")
        check(not p, "checkov: nothing unsuppressed with offload and a KMS key" + (f": {p}" if p else ""))
    else:
        check(False, f"checkov is installed ({CHECKOV}; scripts/check-template.sh installs it)")


def hardening_negative_tests(tpl):
    """Each hardening check fails on a copy that breaks it."""
    res = "Resources"
    bad = copy.deepcopy(tpl)
    bad[res]["KinesisToSqsFunction"]["Properties"]["Events"] = {"Stream": {"Type": "Kinesis", "Properties": {
        "Stream": {"Fn::GetAtt": ["Stream", "Arn"]}, "StartingPosition": "LATEST"}}}
    check(roles_problems(bad), "negative: SAM's Kinesis event (AWSLambdaKinesisExecutionRole) fails the role check")
    bad = copy.deepcopy(tpl)
    bad[res]["RabbitmqToSqsFunction"]["Properties"]["Policies"].append(
        {"Statement": [{"Effect": "Allow", "Action": "kinesis:GetRecords",
                        "Resource": "arn:aws:kinesis:us-east-1:123456789012:stream/*"}]})
    check(roles_problems(bad), "negative: an account-wide stream/* resource fails the role check")
    for what, mutate in [
        ("without reserved concurrency", lambda p: p.pop("ReservedConcurrentExecutions")),
        ("with asynchronous retries", lambda p: p["EventInvokeConfig"].update(MaximumRetryAttempts=2)),
        ("with SAM's default schedule name", lambda p: p["Events"]["Poll"]["Properties"].pop("Name")),
    ]:
        bad = copy.deepcopy(tpl)
        mutate(bad[res]["RabbitmqToSqsFunction"]["Properties"])
        check(poller_problems(bad), f"negative: the poller {what} fails the one-drain check")
    bad = copy.deepcopy(tpl)
    bad[res]["ApigwToSqsFunction"]["Properties"]["Timeout"] = 29
    check(api_timeout_problems(bad), "negative: apigw-to-sqs with Timeout 29 fails the gateway-timeout check")
    bad = copy.deepcopy(tpl)
    bad[res]["S3ToSqsFunction"]["Properties"]["Events"] = {"Objects": {"Type": "S3", "Properties": {
        "Bucket": {"Ref": "InputBucket"}, "Events": ["s3:ObjectCreated:*"]}}}
    bad[res]["InputBucket"]["Properties"].pop("NotificationConfiguration")
    bad[res]["InputBucket"].pop("DependsOn")
    check(s3_permission_problems(bad), "negative: SAM's S3 event (account-wide permission) fails the SourceArn check")
    bad = copy.deepcopy(tpl)
    props = bad[res]["FailureQueue"]["Properties"]
    props.pop("KmsMasterKeyId")
    props["SqsManagedSseEnabled"] = True
    check(kms_problems(bad), "negative: an on-failure queue without the key fails the KMS check")
    bad = copy.deepcopy(tpl)
    bad[res]["PayloadBucket"]["Properties"]["BucketEncryption"] = {"ServerSideEncryptionConfiguration": [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
    check(kms_problems(bad), "negative: an SSE-S3 payload bucket fails the KMS check")
    for policy in ("InputBucketTlsOnly", "PayloadBucketTlsOnly"):
        bad = copy.deepcopy(tpl)
        bad[res].pop(policy)
        check(tls_problems(offload_with_key(bad)), f"negative: without {policy} the TLS check fails")
    bad = copy.deepcopy(tpl)
    bad[res]["Stream"]["Properties"].pop("RetentionPeriodHours")
    check(retention_problems(bad), "negative: a stream without a retention parameter fails the retention check")
    bad = copy.deepcopy(tpl)
    bad[res]["InputBucket"]["Metadata"]["checkov"]["skip"][0]["comment"] = " "
    check(checkov_skips_without_reason(bad), "negative: a checkov suppression without a reason fails")
    if os.path.exists(CHECKOV):
        bad = copy.deepcopy(tpl)
        bad[res]["InputBucket"].pop("Metadata")
        check(checkov_failures(bad, "checkov-negative"), "negative: checkov fails the input bucket without its suppressions")


if __name__ == "__main__":
    main()
