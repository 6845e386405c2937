"""Check the template's Distributed Map (EnableDistributedMap), offline.

* off by default: every resource of the map has a condition that is false
  with the parameters' defaults;
* with the map enabled (JSONL and CSV, with and without a result bucket, on
  upload): cfn-lint passes on the template, and SAM's translator
  (samtranslator) translates it, the state machine and its roles included;
* the state machine's definition, rendered from its DefinitionString for each
  of those settings, is valid Amazon States Language by asl-validator (the
  npm package; scripts/check-template.sh installs it into .local), and is
  what s3-to-sqs reads: ItemReader on s3:getObject with the format's
  ReaderConfig, ItemSelector {index: $$.Map.Item.Index, value:
  $$.Map.Item.Value}, ItemBatcher with both limits and BatchInput {bucket,
  key, etag}, the parameters' concurrency and tolerated failure, a Lambda
  task invoking s3-to-sqs whose Retry takes S3ToSqs.NotForwarded but never
  S3ToSqs.NotForwardable and whose result is a few fields (the map gathers
  one per batch), a ResultWriter exactly when a bucket is given and the
  results dropped (ResultPath null) when none is;
* MaxInputBytesPerBatch cannot exceed 262144 (the state input limit);
* the map's role grants exactly: s3:GetObject on the input bucket's objects,
  lambda:InvokeFunction on s3-to-sqs, states:StartExecution on the map
  itself, states:DescribeExecution and states:StopExecution on its
  executions, and the result writer's S3 actions on the result bucket's
  distributed-map/ prefix only when a bucket is given; the rule's role
  states:StartExecution on the map only;
* negative tests: asl-validator refuses broken definitions (a Next to no
  state, a Map without ItemProcessor), and each check above fails on a
  template that breaks it.

run(tpl, root, check, sam_translate) is called by scripts/check_template.py.
"""

import copy
import json
import os
import subprocess
import sys
import tempfile

import template_render

MAP_RESOURCES = ["DistributedMapStateMachine", "DistributedMapRole", "DistributedMapRule",
                 "DistributedMapRuleRole"]
STATE_LIMIT = 262144
# s3-to-sqs's ARN (`!GetAtt S3ToSqsFunction.Arn`), as template_render renders it.
FUNCTION_ARN = "<S3ToSqsFunction.Arn>"
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012",
          "AWS::StackName": "stack", "AWS::URLSuffix": "amazonaws.com"}
RESULT_BUCKET = "results-bucket"
VARIANTS = {
    "JSONL": {},
    "CSV with a result bucket": {"DistributedMapInputFormat": "CSV",
                                 "DistributedMapResultBucket": RESULT_BUCKET},
    "JSONL on upload": {"DistributedMapOnUpload": "true", "DistributedMapPrefix": "map/"},
}


def with_params(tpl, values):
    """A copy of the template whose parameter defaults are `values`."""
    t = copy.deepcopy(tpl)
    for k, v in values.items():
        t["Parameters"][k]["Default"] = v
    return t


def enabled(tpl, **values):
    return with_params(tpl, {"EnableDistributedMap": "true", **values})


def stack(tpl):
    """The template as deployed with its parameters' defaults, rendered by
    template_render (the pseudo parameters given concrete values)."""
    return template_render.Stack(tpl, PSEUDO)


def evaluate(tpl, node):
    """A value as deployed with the parameters at their defaults: a `Ref` to a
    resource is `<Name>`, a `GetAtt` `<Name.Attribute>` (template_render)."""
    value = stack(tpl).render(node)
    return None if value is template_render.NOVALUE else value


def holds(tpl, condition):
    """Whether a condition holds with the parameters at their defaults."""
    return stack(tpl).conds[condition]


def definition(tpl):
    """The state machine's definition as deployed with the defaults, or why not."""
    res = tpl["Resources"].get("DistributedMapStateMachine")
    if not res:
        return None, "no DistributedMapStateMachine"
    text = evaluate(tpl, res["Properties"]["DefinitionString"])
    try:
        return json.loads(text), None
    except json.JSONDecodeError as e:
        return None, f"the rendered definition is not JSON: {e}"


def asl_validator(root):
    return os.path.join(root, ".local", "asl-validator", "node_modules", ".bin", "asl-validator")


def asl_problems(root, doc):
    """What asl-validator says of a definition ([] when valid)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
        path = f.name
    try:
        run = subprocess.run(["node", asl_validator(root), "--json-path", path], capture_output=True,
                             text=True, timeout=120)
    finally:
        os.unlink(path)
    if run.returncode == 0:
        return []
    return [(run.stdout + run.stderr).strip()[-600:] or f"exit {run.returncode}"]


def shape_problems(tpl, doc):
    """Where the definition differs from what s3-to-sqs and the parameters say."""
    p = {k: v.get("Default") for k, v in tpl["Parameters"].items()}
    found = []
    items = (doc.get("States") or {}).get("Items") or {}
    if items.get("Type") != "Map":
        return ["no Map state Items"]
    reader = items.get("ItemReader") or {}
    config = reader.get("ReaderConfig") or {}
    if not str(reader.get("Resource", "")).endswith(":states:::s3:getObject"):
        found.append(f"ItemReader.Resource {reader.get('Resource')}")
    fmt = p["DistributedMapInputFormat"]
    if config.get("InputType") != fmt:
        found.append(f"InputType {config.get('InputType')} for {fmt}")
    if fmt == "CSV" and config.get("CSVHeaderLocation") != "FIRST_ROW":
        found.append("CSV without CSVHeaderLocation FIRST_ROW")
    if items.get("ItemSelector") != {"index.$": "$$.Map.Item.Index", "value.$": "$$.Map.Item.Value"}:
        found.append(f"ItemSelector {items.get('ItemSelector')} is not the {{index, value}} s3-to-sqs reads")
    batcher = items.get("ItemBatcher") or {}
    if batcher.get("MaxItemsPerBatch") != int(p["DistributedMapMaxItemsPerBatch"]):
        found.append("MaxItemsPerBatch is not the parameter's")
    if batcher.get("MaxInputBytesPerBatch") != int(p["DistributedMapMaxInputBytesPerBatch"]):
        found.append("MaxInputBytesPerBatch is not the parameter's")
    if set((batcher.get("BatchInput") or {})) != {"bucket.$", "key.$", "etag.$"}:
        found.append(f"BatchInput {batcher.get('BatchInput')} is not {{bucket, key, etag}}")
    if items.get("MaxConcurrency") != int(p["DistributedMapConcurrency"]):
        found.append("MaxConcurrency is not the parameter's")
    if items.get("ToleratedFailurePercentage") != int(p["DistributedMapToleratedFailurePercentage"]):
        found.append("ToleratedFailurePercentage is not the parameter's")
    processor = items.get("ItemProcessor") or {}
    if (processor.get("ProcessorConfig") or {}).get("Mode") != "DISTRIBUTED":
        found.append("not a Distributed Map (ProcessorConfig.Mode)")
    tasks = [s for s in (processor.get("States") or {}).values() if s.get("Type") == "Task"]
    if len(tasks) != 1:
        found.append(f"{len(tasks)} tasks in the ItemProcessor, not 1")
    for task in tasks:
        if not str(task.get("Resource", "")).endswith(":states:::lambda:invoke") or \
                (task.get("Parameters") or {}).get("FunctionName") != FUNCTION_ARN or \
                (task.get("Parameters") or {}).get("Payload.$") != "$":
            found.append("the task does not invoke s3-to-sqs with the batch as is")
        kept = task.get("ResultSelector") or {}
        if not kept or any(not str(v).startswith("$.Payload.") for v in kept.values()):
            found.append("the task's result is not a few fields of the answer (ResultSelector): "
                         "the map gathers one per batch")
        retried = {e for r in task.get("Retry", []) for e in r.get("ErrorEquals", [])}
        if "S3ToSqs.NotForwarded" not in retried:
            found.append("S3ToSqs.NotForwarded is not retried")
        if retried & {"S3ToSqs.NotForwardable", "S3ToSqs.InvalidEvent", "States.ALL"}:
            found.append(f"a failure no retry can mend is retried: {sorted(retried)}")
    writer = items.get("ResultWriter")
    bucket = p.get("DistributedMapResultBucket") or ""
    if bucket and (not writer or (writer.get("Parameters") or {}).get("Bucket") != bucket):
        found.append("no ResultWriter to the result bucket")
    if not bucket and writer:
        found.append("a ResultWriter without a result bucket")
    if not bucket and items.get("ResultPath", "$") is not None:
        found.append("without a result writer the results are not dropped (ResultPath null): "
                     "a large object's results would pass the 256 KiB limit")
    return found


def limit_problems(tpl):
    p = tpl["Parameters"]["DistributedMapMaxInputBytesPerBatch"]
    return [] if int(p.get("MaxValue", STATE_LIMIT + 1)) <= STATE_LIMIT else \
        [f"MaxInputBytesPerBatch allows {p.get('MaxValue')} > {STATE_LIMIT}"]


def off_by_default_problems(tpl):
    found = []
    for name in MAP_RESOURCES:
        res = tpl["Resources"].get(name)
        if res is None:
            found.append(f"no {name}")
        elif not res.get("Condition") or holds(tpl, res["Condition"]):
            found.append(f"{name} is created with the defaults")
    return found


def statements(node):
    out = []

    def visit(n):
        if isinstance(n, dict) and "Effect" in n and "Action" in n:
            out.append(n)
        elif isinstance(n, dict):
            for v in n.values():
                visit(v)
        elif isinstance(n, list):
            for v in n:
                visit(v)

    visit(node)
    return out


def grants(tpl, role):
    """(action, resource) pairs a role's inline policies grant, as deployed."""
    res = tpl["Resources"].get(role)
    if not res:
        return set()
    pairs = set()
    for st in statements(evaluate(tpl, res["Properties"].get("Policies", []))):
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        resources = st.get("Resource", [])
        resources = resources if isinstance(resources, list) else [resources]
        pairs |= {(a, r) for a in actions for r in resources}
    return pairs


def expected_map_grants(tpl):
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:stack-distributed-map"
    executions = "arn:aws:states:us-east-1:123456789012:execution:stack-distributed-map/*"
    want = {("s3:GetObject", "arn:aws:s3:::stack-123456789012-us-east-1-input/*"),
            ("lambda:InvokeFunction", FUNCTION_ARN),
            ("states:StartExecution", machine),
            ("states:DescribeExecution", executions),
            ("states:StopExecution", executions)}
    bucket = tpl["Parameters"]["DistributedMapResultBucket"].get("Default") or ""
    if bucket:
        want |= {(a, f"arn:aws:s3:::{bucket}/distributed-map/*") for a in
                 ("s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload")}
    return want


def role_problems(tpl):
    found = []
    got, want = grants(tpl, "DistributedMapRole"), expected_map_grants(tpl)
    if got != want:
        found.append(f"DistributedMapRole grants {sorted(got - want)} beyond, lacks {sorted(want - got)}")
    if holds(tpl, "DistributedMapOnUploadEnabled"):
        rule = grants(tpl, "DistributedMapRuleRole")
        machine = "<DistributedMapStateMachine>"  # !Ref of the state machine: its ARN
        if rule != {("states:StartExecution", machine)}:
            found.append(f"DistributedMapRuleRole grants {sorted(rule)}")
    return found


def cfn_lint_problems(root, tpl, name):
    """cfn-lint on a copy of the template written to .local/<name>.yaml."""
    import yaml

    path = os.path.join(root, ".local", f"{name}.yaml")

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(type(tpl), lambda d, m: d.represent_dict(dict(m)))
    with open(path, "w", encoding="utf-8") as f:
        yaml.dump(json.loads(json.dumps(tpl)), f, Dumper=Dumper, sort_keys=False)
    lint = os.path.join(os.path.dirname(sys.executable), "cfn-lint")
    run = subprocess.run([lint, path], capture_output=True, text=True, timeout=600)
    return [] if run.returncode == 0 else [(run.stdout + run.stderr).strip()[-800:]]


def translated_problems(tpl, sam_translate):
    try:
        out = sam_translate(tpl)
    except Exception as e:  # noqa: BLE001 - the translator's own error is the finding
        return [f"samtranslator: {e}"]
    resources = out.get("Resources", {})
    missing = [n for n in MAP_RESOURCES if n not in resources and
               (n not in ("DistributedMapRule", "DistributedMapRuleRole") or
                holds(tpl, "DistributedMapOnUploadEnabled"))]
    return [f"not in SAM's output: {missing}"] if missing else []


def run(tpl, root, check, sam_translate):
    p = off_by_default_problems(tpl)
    check(not p, "Distributed Map: off by default (every resource under a false condition)" +
          (f": {p}" if p else ""))
    p = limit_problems(tpl)
    check(not p, "Distributed Map: MaxInputBytesPerBatch at most 262144" + (f": {p}" if p else ""))
    have_validator = os.path.exists(asl_validator(root))
    check(have_validator, f"asl-validator is installed ({asl_validator(root)}; scripts/check-template.sh installs it)")
    for what, values in VARIANTS.items():
        t = enabled(tpl, **values)
        doc, why = definition(t)
        check(doc is not None, f"Distributed Map ({what}): the definition renders as JSON" + (f": {why}" if why else ""))
        if doc is None:
            continue
        if have_validator:
            p = asl_problems(root, doc)
            check(not p, f"Distributed Map ({what}): asl-validator accepts the definition" + (f": {p}" if p else ""))
        p = shape_problems(t, doc)
        check(not p, f"Distributed Map ({what}): reader, selector, batcher and task as s3-to-sqs reads them" +
              (f": {p}" if p else ""))
        p = role_problems(t)
        check(not p, f"Distributed Map ({what}): the roles grant exactly what the map needs" + (f": {p}" if p else ""))
        p = translated_problems(t, sam_translate)
        check(not p, f"Distributed Map ({what}): SAM's translator takes the template" + (f": {p}" if p else ""))
    writes = {a for a, _ in grants(enabled(tpl), "DistributedMapRole")} & {"s3:PutObject"}
    check(not writes, "Distributed Map: no result bucket, no s3:PutObject")
    slug = "template-distributed-map"
    p = cfn_lint_problems(root, enabled(tpl, **VARIANTS["CSV with a result bucket"],
                                        DistributedMapOnUpload="true", DistributedMapPrefix="map/"), slug)
    check(not p, "Distributed Map: cfn-lint passes on the template with the map on (CSV, results, on upload under a prefix)" +
          (f": {p}" if p else ""))
    negative_tests(tpl, root, check, have_validator)


def negative_tests(tpl, root, check, have_validator):
    on = enabled(tpl, **VARIANTS["CSV with a result bucket"])
    doc, _ = definition(on)
    if doc is None:
        check(False, "negative: no definition to break")
        return
    if have_validator:
        bad = copy.deepcopy(doc)
        bad["States"]["Object"]["Next"] = "Nowhere"
        check(asl_problems(root, bad), "negative: asl-validator refuses a Next to no state")
        bad = copy.deepcopy(doc)
        bad["States"]["Items"].pop("ItemProcessor")
        check(asl_problems(root, bad), "negative: asl-validator refuses a Map without ItemProcessor")
        bad = copy.deepcopy(doc)
        bad["States"]["Items"]["ItemReader"]["Parameters"]["Bucket.$"] = "$..[bad"
        check(asl_problems(root, bad), "negative: asl-validator refuses a broken path")
    for what, mutate in [
        ("an ItemSelector without the index", lambda d: d["States"]["Items"]["ItemSelector"].pop("index.$")),
        ("a Retry on every error", lambda d: d["States"]["Items"]["ItemProcessor"]["States"]["Forward"]["Retry"]
         .append({"ErrorEquals": ["States.ALL"]})),
        ("a reader of JSON for CSV", lambda d: d["States"]["Items"]["ItemReader"]["ReaderConfig"]
         .update(InputType="JSON")),
        ("no result writer", lambda d: d["States"]["Items"].pop("ResultWriter")),
        ("the task's whole answer kept", lambda d: d["States"]["Items"]["ItemProcessor"]["States"]["Forward"]
         .pop("ResultSelector")),
    ]:
        bad = copy.deepcopy(doc)
        mutate(bad)
        check(shape_problems(on, bad), f"negative: {what} fails the definition check")
    plain = enabled(tpl)
    kept, _ = definition(plain)
    if kept is not None:
        kept["States"]["Items"].pop("ResultPath", None)
        check(shape_problems(plain, kept), "negative: results kept without a result writer fail the definition check")
    bad = copy.deepcopy(on)
    bad["Parameters"]["DistributedMapMaxInputBytesPerBatch"]["MaxValue"] = 300000
    check(limit_problems(bad), "negative: MaxInputBytesPerBatch up to 300000 fails the limit check")
    bad = copy.deepcopy(on)
    bad["Resources"]["DistributedMapRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"].append(
        {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": "*"})
    check(role_problems(bad), "negative: lambda:InvokeFunction on * fails the role check")
    bad = copy.deepcopy(tpl)
    bad["Resources"]["DistributedMapStateMachine"].pop("Condition")
    check(off_by_default_problems(bad), "negative: a state machine without its condition fails the off-by-default check")
