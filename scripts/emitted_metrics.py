"""What the code emits as CloudWatch metrics, read from the Rust source.

The constants of `shared/src/observe/metrics.rs` and of each function's `metric`
module that a `counter!`/`gauge!`/`histogram!` call uses, the namespace
(`METRICS_NAMESPACE`'s default in `shared/src/setup/config/variables.rs`), the EMF dimension
(`with_dimension` in `shared/src/observe.rs`) and each function's
`SERVICE`. Used by scripts/check_dashboard.py, so that renaming a metric in
the code without the dashboard fails the template checks.
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


def emitted(files, read, names):
    """Metric names used by counter!/gauge!/histogram! in `files`; `names`
    maps constant names to metric names. Returns (names, problems)."""
    out, problems = set(), []
    for rel in files:
        for m in re.finditer(r"\b(counter|gauge|histogram)!\(\s*([^,)]+?)\s*([,)])", read(rel)):
            arg, end = m.group(2), m.group(3)
            if end == ",":
                problems.append(f"{rel}: {m.group(0)}...: labelled metrics add EMF dimensions the check does not know")
            if arg.startswith('"'):
                out.add(arg.strip('"'))
            elif arg.split("::")[-1] in names:
                out.add(names[arg.split("::")[-1]])
            else:
                problems.append(f"{rel}: {m.group(0)}: cannot tell the metric's name")
    return out, problems


def code_metrics(root, read=None, crates=()):
    """What the code emits: namespace, dimension names, and per crate its
    service name and metric names."""
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
        functions[crate] = {"service": service, "metrics": shared | own}
    return {
        "namespace": ns.group(1) if ns else None,
        "dimensions": dims,
        "shared": shared,
        "functions": functions,
        "problems": problems,
    }
