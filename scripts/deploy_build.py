#!/usr/bin/env python3
"""Build what `sam deploy` would upload, check it, and run it.

Called by scripts/deploy-build.sh (which installs the tools first):

1. Adds the Rust target for the template's architecture (`rustup target
   add`) and, when this machine cannot run that architecture, the Debian
   packages that can (`qemu-user` and the target's C library).
2. Runs `sam build` on template.yaml from the repository's root, as a user
   would (cargo-lambda builds each function; the workspace's `target/` is
   its cargo cache, so a second run on one machine only rebuilds what
   changed), with the release build's flags (scripts/build_env.py): after
   scripts/release.sh (scripts/test.sh runs it first) nothing is rebuilt. `.aws-sam/build` is removed first, so only this run's output is
   checked.
3. Checks the output: the built template (what `sam deploy` reads) points
   every function at a directory with one `bootstrap`, an ELF executable for
   the template's architecture, under the size docs/operating.md states,
   needing no newer glibc than the runtime's.
4. Runs each built `bootstrap` (under qemu for another architecture) with
   the runtime-API harness (scripts/lambda_harness.py) on one sample event
   against the local SQS: its answer, the messages in the queue, and the EMF
   metrics it wrote (namespace, dimensions, names on the dashboard).

Prints one line per check and `deploy-build: N passed, M failed`.
"""

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

import boto3
from cfnlint.decode import cfn_yaml
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_env  # noqa: E402
from checks import Checks  # noqa: E402
import check_dashboard  # noqa: E402
from samples import SAMPLES, expected  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, ".aws-sam", "build")

# Template architecture -> Rust target, ELF machine, the machine names
# (platform.machine()) that run it natively, and how to run it elsewhere.
ARCHITECTURES = {
    "arm64": {"target": "aarch64-unknown-linux-gnu", "elf": "EM_AARCH64", "native": {"aarch64", "arm64"},
              "runner": "qemu-aarch64 -L /usr/aarch64-linux-gnu",
              "packages": ["qemu-user", "libc6-arm64-cross"]},
    "x86_64": {"target": "x86_64-unknown-linux-gnu", "elf": "EM_X86_64", "native": {"x86_64", "amd64"},
               "runner": "qemu-x86_64 -L /usr/x86_64-linux-gnu",
               "packages": ["qemu-user", "libc6-amd64-cross"]},
}
# The newest glibc each runtime has (provided.al2023: Amazon Linux 2023,
# glibc 2.34; provided.al2: Amazon Linux 2, glibc 2.26).
RUNTIME_GLIBC = {"provided.al2023": (2, 34), "provided.al2": (2, 26)}

CHECKS = Checks("deploy-build")
check = CHECKS.check
finish = CHECKS.finish


def size_limit():
    """The largest bootstrap the documentation allows: 'at most **N MiB**'
    in the Deploying section of docs/operating.md."""
    text = open(os.path.join(ROOT, "docs", "operating.md"), encoding="utf-8").read()
    section = text.split("\n## Deploying", 1)[-1].split("\n## ", 1)[0]
    m = re.search(r"at most\s+\*\*(\d+) MiB\*\*", section)
    return int(m.group(1)) * 1024 * 1024 if m else None


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, **kw)


def prepare(arch):
    spec = ARCHITECTURES[arch]
    added = run(["rustup", "target", "add", spec["target"]], capture_output=True, text=True)
    check(added.returncode == 0, f"rustup target add {spec['target']}" +
          ("" if added.returncode == 0 else f": {added.stderr.strip()[-300:]}"))
    if platform.machine().lower() in spec["native"]:
        return ""
    qemu = spec["runner"].split()[0]
    libc = spec["runner"].split()[-1]
    if not shutil.which(qemu) or not os.path.isdir(libc):
        print(f"-- installing {' '.join(spec['packages'])} (Debian) to run {arch} binaries", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        ok = run(["apt-get", "update", "-qq"], env=env).returncode == 0 and run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *spec["packages"]], env=env,
            stdout=subprocess.DEVNULL).returncode == 0
        check(ok, f"apt-get install {' '.join(spec['packages'])}")
    check(shutil.which(qemu) and os.path.isdir(libc), f"{qemu} and {libc} run {arch} binaries here")
    return spec["runner"]


def sam_build(arch):
    shutil.rmtree(BUILD, ignore_errors=True)
    log_path = os.path.join(ROOT, ".local", "sam-build.log")
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        # The release build's flags (scripts/build_env.py): after
        # scripts/release.sh, cargo finds every crate built and only links
        # nothing; the artifacts are a release's.
        done = run(["sam", "build", "--template-file", "template.yaml"], stdout=log, stderr=subprocess.STDOUT,
                   env=build_env.environ(ROOT, arch, base=dict(os.environ, SAM_CLI_TELEMETRY="0")))
    minutes = (time.monotonic() - started) / 60
    ok = check(done.returncode == 0, f"sam build ({minutes:.1f} min; log .local/sam-build.log)")
    if not ok:
        print("".join(open(log_path, encoding="utf-8").readlines()[-30:]))
    return ok


def glibc_needed(elf):
    """The newest GLIBC_x.y version the binary asks for, or None."""
    newest = None
    for section in elf.iter_sections():
        if isinstance(section, GNUVerNeedSection):
            for _, auxes in section.iter_versions():
                for aux in auxes:
                    m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", aux.name)
                    if m:
                        v = (int(m.group(1)), int(m.group(2)))
                        newest = max(newest or v, v)
    return newest


def inspect(path, arch, glibc_max, limit):
    """What is wrong with `path` as a bootstrap for `arch` on a runtime whose
    newest glibc is `glibc_max`, at most `limit` bytes: a dict of the checks
    (size, executable, elf, glibc), each (ok, what)."""
    size = os.path.getsize(path)
    out = {
        "size": (bool(limit) and size <= limit,
                 f"{size / 1048576:.1f} MiB, at most {limit and limit // 1048576} MiB"),
        "executable": (os.access(path, os.X_OK), "executable"),
    }
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            machine, kind, cls = elf["e_machine"], elf["e_type"], elf.elfclass
            glibc = glibc_needed(elf)
    except Exception as e:  # pyelftools raises its own errors on a non-ELF file
        out["elf"] = (False, f"not an ELF file ({e})")
        return out
    out["elf"] = (machine == ARCHITECTURES[arch]["elf"] and cls == 64 and kind in ("ET_EXEC", "ET_DYN"),
                  f"64-bit ELF executable for {arch} ({machine}, {cls}-bit, {kind})")
    out["glibc"] = (bool(glibc_max) and (glibc is None or glibc <= glibc_max),
                    f"needs glibc {'.'.join(map(str, glibc)) if glibc else 'none'}, "
                    f"the runtime has {'.'.join(map(str, glibc_max)) if glibc_max else '?'}")
    return out


def check_artifact(name, arch, runtime, limit):
    """The built function's bootstrap; returns its path if it can run."""
    built = cfn_yaml.load(os.path.join(BUILD, "template.yaml"))
    code = str(built["Resources"].get(name, {}).get("Properties", {}).get("CodeUri", ""))
    folder = os.path.normpath(os.path.join(BUILD, code))
    path = os.path.join(folder, "bootstrap")
    if not check(code and os.path.isfile(path) and os.listdir(folder) == ["bootstrap"],
                 f"{name}: the built template's CodeUri {code} holds one bootstrap"):
        return None
    found = inspect(path, arch, RUNTIME_GLIBC.get(runtime), limit)
    for ok, what in found.values():
        check(ok, f"{name}: bootstrap {what}")
    return path if found["elf"][0] else None


def negative_tests(bootstrap, arch, runtime, limit):
    """The artifact checks fail on what they must refuse."""
    other = next(a for a in ARCHITECTURES if a != arch)
    glibc_max = RUNTIME_GLIBC.get(runtime)
    check(not inspect(bootstrap, other, glibc_max, limit)["elf"][0],
          f"negative: the {arch} bootstrap fails the ELF check for {other}")
    check(not inspect(bootstrap, arch, glibc_max, 1024 * 1024)["size"][0],
          "negative: a 1 MiB limit fails the size check")
    host = os.path.realpath(sys.executable)  # this Python: an ELF that needs glibc
    check(not inspect(host, arch, (2, 0), None)["glibc"][0],
          "negative: a binary needing glibc fails the glibc check on a runtime with glibc 2.0")
    check(not inspect(os.path.join(ROOT, "README.md"), arch, glibc_max, limit)["elf"][0],
          "negative: a text file fails the ELF check")


def run_artifact(name, crate, path, runner, endpoint, dashboard_rows):
    sample = SAMPLES.get(crate)
    spec = expected(crate, sample) if sample else None
    if not check(spec, f"{name}: a sample event for {crate} and its expected answer"):
        return
    want, what, landing = spec
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    url = sqs.create_queue(QueueName=f"deploy-build-{crate}-{int(time.time() * 1000)}")["QueueUrl"]
    env = {"QUEUE_URL": url, "AWS_ENDPOINT_URL_SQS": endpoint, "AWS_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "RUST_LOG": "warn", "LOG_FORMAT": "text"}
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "lambda_harness.py"), "--binary", path,
           "--name", crate, "--timeout", "60"]
    if runner:
        cmd += ["--runner", runner]
    for k, v in env.items():
        cmd += ["--env", f"{k}={v}"]
    proc = run(cmd + [os.path.join(ROOT, sample)], capture_output=True, text=True)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    summary = next((x for x in lines if "summary" in x), {})
    answers = [x for x in lines if "event" in x]
    how = f" under {runner.split()[0]}" if runner else ""
    good = len(answers) == 1 and answers[0].get("status") == "response" and want(answers[0]["response"])
    ok = check(good, f"{name}: the built bootstrap{how} answers {os.path.basename(sample)} with {what}" +
               ("" if good else f": {answers or summary or proc.stderr.strip()[-500:]}"))
    landed, empty = 0, 0
    while ok and empty < 2:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        landed += len(got)
        empty = empty + 1 if not got else 0
        for m in got:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    sqs.delete_queue(QueueUrl=url)
    metrics = summary.get("metrics", {})
    check(ok and landed == landing and metrics.get("MessagesSent") == landing,
          f"{name}: {landed} of {landing} messages in the queue, MessagesSent {metrics.get('MessagesSent')}")
    ns, dims = summary.get("emf_namespaces"), summary.get("emf_dimensions")
    row = dashboard_rows.get(crate, set())
    off = sorted(set(metrics) - row)
    check(metrics and not off and ns == [dashboard_rows["namespace"]] and dims == [{"Service": crate}],
          f"{name}: its EMF metrics ({len(metrics)}, namespace {ns}, dimensions {dims}) are on its dashboard row" +
          (f"; not there: {off}" if off else ""))


def dashboard_metrics(tpl):
    """Per service, the SqsForwarder metrics on the dashboard (defaults)."""
    crates = sorted(set(check_dashboard.function_crates(tpl).values()))
    code = check_dashboard.code_metrics(ROOT, crates=crates)
    stack, bodies = check_dashboard.render_dashboards(tpl, {})
    rows = {"namespace": check_dashboard.namespace_of(stack, code)}
    for body in bodies.values():
        if isinstance(body, Exception):
            continue
        for _, namespace, name, dims, _ in check_dashboard.metric_lines(body):
            if namespace == rows["namespace"] and "Service" in dims:
                rows.setdefault(dims["Service"], set()).add(name)
    return rows


def main():
    started = time.monotonic()
    tpl = cfn_yaml.load(os.path.join(ROOT, "template.yaml"))
    g = tpl.get("Globals", {}).get("Function", {})
    functions = {n: r.get("Properties", {}) for n, r in tpl["Resources"].items()
                 if r.get("Type") == "AWS::Serverless::Function"}
    archs = {tuple(p.get("Architectures", g.get("Architectures", ["x86_64"]))) for p in functions.values()}
    runtimes = {p.get("Runtime", g.get("Runtime")) for p in functions.values()}
    if not check(len(archs) == 1 and list(archs)[0][0] in ARCHITECTURES and len(runtimes) == 1,
                 f"one architecture and runtime for every function: {sorted(archs)}, {sorted(runtimes)}"):
        finish()
    arch, runtime = list(archs)[0][0], runtimes.pop()
    limit = size_limit()
    check(limit, "docs/operating.md's Deploying section states the largest bootstrap ('at most **N MiB**')")
    runner = prepare(arch)
    if not sam_build(arch):
        finish()
    built_at = time.monotonic()
    endpoint = os.environ.get("SQS_TEST_ENDPOINT") or subprocess.run(
        [os.path.join(ROOT, "scripts", "local-sqs.sh"), "start"], capture_output=True, text=True,
        check=True).stdout.strip()
    rows = dashboard_metrics(tpl)
    built = None
    for name, props in functions.items():
        crate = os.path.basename(str(props.get("CodeUri", "")).rstrip("/"))
        path = check_artifact(name, arch, runtime, limit)
        if path:
            built = built or path
            run_artifact(name, crate, path, runner, endpoint, rows)
    if built:
        negative_tests(built, arch, runtime, limit)
    now = time.monotonic()
    # What this step adds to the test run, from its own clock (the tools'
    # install, before this script, is not in it).
    print(f"-- time: {(now - started) / 60:.1f} min in all; the checks and the {len(functions)} runs "
          f"after sam build {now - built_at:.0f} s", flush=True)
    finish()


if __name__ == "__main__":
    main()
