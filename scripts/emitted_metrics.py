"""What the code emits as CloudWatch metrics, read from the Rust source.

The constants of `shared/src/observe/metrics.rs` and of each function's `metric`
module that a `counter!`/`gauge!`/`histogram!` call uses, the namespace
(`METRICS_NAMESPACE`'s default in `shared/src/setup/config/variables.rs`), the EMF dimension
(`with_dimension` in `shared/src/observe.rs`) and each function's
`SERVICE`. Used by scripts/check_dashboard.py, so that renaming a metric in
the code without the dashboard fails the template checks.

A metric recorded with labels (`histogram!(QUEUE_BACKLOG, "Queue" => name)`)
gets one more EMF dimension per label beside the default ones
(metrics_cloudwatch_embedded writes one EMF document per label set): the
label names are read from the call's `"Name" => value` pairs, and each
metric's forms (its sets of label names, the empty set when it is recorded
without labels) are returned. A label whose name is not a string literal
cannot be read and is reported as a problem.
"""

import os
import re


def read_source(root):
    def read(rel):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            return f.read()
    return read


def rust_files(root, rel_dir):
    out = []
    for dirpath, _, files in os.walk(os.path.join(root, rel_dir)):
        out += [os.path.relpath(os.path.join(dirpath, f), root) for f in files if f.endswith(".rs")]
    return sorted(out)


def consts(text):
    return dict(re.findall(r'pub const ([A-Z][A-Z0-9_]*): &str = "([^"]+)";', text))


def metric_module(text):
    """The constants of the `pub mod metric { ... }` block of a source file."""
    m = re.search(r"pub mod metric \{(.*?)\n\}", text, re.S)
    return consts(m.group(1)) if m else {}


MACRO = re.compile(r"\b(counter|gauge|histogram)!\(")
LABEL = re.compile(r'"([^"\\]+)"\s*=>\s*\S', re.S)


def macro_args(text, start):
    """The top-level comma-separated arguments of the macro call whose `(`
    is at `start - 1`, and the index after its `)`; strings and nested
    brackets are skipped whole. None if the call does not close."""
    args, depth, i, begin = [], 0, start, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[begin:i].strip())
                return [a for a in args if a], i + 1
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[begin:i].strip())
            begin = i + 1
        i += 1
    return None


def emitted(files, read, names):
    """The metrics recorded by counter!/gauge!/histogram! in `files`;
    `names` maps constant names to metric names. Returns ({metric name:
    set of frozensets of label names}, problems)."""
    out, problems = {}, []
    for rel in files:
        text = read(rel)
        for m in MACRO.finditer(text):
            call = macro_args(text, m.end())
            shown = f"{m.group(1)}!({text[m.end():m.end() + 60].split(chr(10))[0]}"
            if not call:
                problems.append(f"{rel}: {shown}...: cannot read the call")
                continue
            args, _ = call
            arg = args[0] if args else ""
            if arg.startswith('"'):
                name = arg.strip('"')
            elif arg.split("::")[-1] in names:
                name = names[arg.split("::")[-1]]
            else:
                problems.append(f"{rel}: {shown}...: cannot tell the metric's name")
                continue
            labels = []
            for label in args[1:]:
                lm = LABEL.match(label)
                if not lm:
                    problems.append(f"{rel}: {shown}...: a label ({label}) whose name the check cannot read; "
                                    "write labels as \"Name\" => value")
                    break
                labels.append(lm.group(1))
            else:
                out.setdefault(name, set()).add(frozenset(labels))
    return out, problems


def code_metrics(root, read=None, crates=()):
    """What the code emits: namespace, dimension names, and per crate its
    service name, metric names and each metric's forms (label name sets)."""
    read = read or read_source(root)
    config = read("shared/src/setup/config/variables.rs")
    ns = re.search(r'"METRICS_NAMESPACE",\s*"([^"]+)"', config)
    obs = read("shared/src/observe.rs")
    dims = re.findall(r'\.with_dimension\("([^"]+)"', obs)
    shared_consts = consts(read("shared/src/observe/metrics.rs"))
    shared, problems = emitted(rust_files(root, "shared/src"), read, shared_consts)
    functions = {}
    for crate in crates:
        src = f"functions/{crate}/src"
        files = rust_files(root, src)
        own_consts = {}
        service = None
        for rel in files:
            text = read(rel)
            own_consts.update(metric_module(text))
            s = re.search(r'pub const SERVICE: &str = "([^"]+)";', text)
            service = service or (s and s.group(1))
        own, p = emitted(files, read, {**shared_consts, **own_consts})
        problems += p
        forms = {m: set(f) for m, f in shared.items()}
        for m, f in own.items():
            forms.setdefault(m, set()).update(f)
        functions[crate] = {"service": service, "metrics": set(forms), "forms": forms}
    forms = {(m, labels) for info in functions.values() for m, f in info["forms"].items() for labels in f}
    problems += [f"{m}: a label named like a default dimension ({sorted(labels & set(dims))})"
                 for m, labels in sorted(forms, key=str) if labels & set(dims)]
    return {
        "namespace": ns.group(1) if ns else None,
        "dimensions": dims,
        "shared": set(shared),
        "functions": functions,
        "problems": problems,
    }
