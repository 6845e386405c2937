#!/usr/bin/env python3
"""Check what cfn-lint does not about template.yaml.

* every function's CodeUri is a crate of the workspace, with a binary named
  after it (what `sam build` with cargo-lambda builds);
* every environment variable a function is given is one the code reads
  (the shared table in README.md, or the function's own table in
  functions/<name>/README.md), and the target queue is always given;
* every !Ref / !GetAtt / ${...} names a resource, a parameter or a pseudo
  parameter;
* runtime, architecture and build method are the ones this project builds for;
* no IAM statement of a function allows a `*` action or resource for SQS, S3,
  KMS or Secrets Manager;
* with the parameters' defaults, no HTTP API route or function URL is open
  without auth (AuthorizationType / AuthType NONE);
* the replay command's policy (ReplayPolicy) grants exactly the actions its
  README lists under "Permissions", none with a `*` action or resource;
* negative tests: the wildcard and auth checks fail on mutated copies of the
  template (a `sqs:*` action, a `*` resource, an open route), and the replay
  policy check fails on an extra action or a `*` resource, so a check that
  passes everything is caught.

Prints one line per check and a closing "N passed, N failed" line.
Uses cfn-lint's own YAML loader (from the tools virtualenv).
"""

import os
import re
import sys

from cfnlint.decode import cfn_yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PSEUDO = {"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition",
          "AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix"}

results = []


def check(ok, what):
    results.append((bool(ok), what))
    print(("ok   " if ok else "FAIL ") + what)


def table_vars(path, section=None):
    text = open(path, encoding="utf-8").read()
    if section:
        text = text.split(section, 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\| `([A-Z][A-Z0-9_]*)` \|", text, re.M)]


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
    shared_vars = set(table_vars(os.path.join(ROOT, "README.md"), "## Configuration"))
    check(shared_vars, f"README.md documents {len(shared_vars)} shared variables")
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

    negative_tests(tpl)

    passed = sum(1 for ok, _ in results if ok)
    failed = len(results) - passed
    print(f"template: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


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


if __name__ == "__main__":
    main()
