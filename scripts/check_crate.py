#!/usr/bin/env python3
"""Check the shared crate as crates.io and its users get it (run it through
scripts/check-crate.sh):

1. `cargo publish --dry-run -p sqs-forwarder` packs and verifies it (it
   builds the packed files on their own, with the default features, and
   the build must warn of nothing);
2. the package holds what the crate needs and nothing else (the manifest,
   README.md, LICENSE, the library's sources) and the metadata crates.io
   and docs.rs read;
3. the core builds without any feature (`cargo clippy -p sqs-forwarder
   --no-default-features`, warnings denied), as a program bringing its own
   transport takes it;
4. examples/crate-user, a crate outside the workspace that depends on
   `sqs-forwarder = "0.1"`, builds on the unpacked package and sends
   through the local SQS; the messages are read back from the queue.

The verification build and crate-user's share one target directory
(target/crate-check), so the second builds only crate-user itself.
Prints one line per check and `crate: N passed, M failed`.
"""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib

import boto3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKS = Checks("crate")
check = CHECKS.check
TARGET = os.path.join(ROOT, "target", "crate-check")
# What the package may hold besides the library's sources.
PACKAGE_FILES = {"Cargo.toml", "Cargo.toml.orig", "Cargo.lock", ".cargo_vcs_info.json", "README.md", "LICENSE"}
METADATA = ["description", "license", "repository", "readme", "keywords", "categories", "rust-version",
            "documentation"]


def cargo(args, cwd=ROOT, **kw):
    # No debug info: these builds are run, not debugged (faster, and a
    # fraction of the disk).
    env = dict(os.environ, CARGO_TARGET_DIR=TARGET, CARGO_PROFILE_DEV_DEBUG="false")
    started = time.monotonic()
    done = subprocess.run(["cargo", *args], cwd=cwd, env=env, capture_output=True, text=True, **kw)
    return done, time.monotonic() - started


def package_problems(names, manifest):
    """What a package (its file names and its manifest) holds that it
    should not, or lacks."""
    found = []
    for name in names:
        if name in PACKAGE_FILES or (name.startswith("src/") and name.endswith(".rs")):
            continue
        found.append(f"{name} is in the package")
    for need in ("Cargo.toml", "README.md", "LICENSE", "src/lib.rs"):
        if need not in names:
            found.append(f"{need} is missing")
    pkg = manifest.get("package", {})
    found += [f"no {field}" for field in METADATA if not pkg.get(field)]
    if len(pkg.get("keywords", [])) > 5:
        found.append(f"{len(pkg['keywords'])} keywords (crates.io takes 5)")
    if pkg.get("publish") is False or pkg.get("publish") == []:
        found.append("publish = false")
    docs = manifest.get("package", {}).get("metadata", {}).get("docs", {}).get("rs", {})
    if not docs.get("features") and not docs.get("all-features"):
        found.append("no [package.metadata.docs.rs] features")
    missing = [f for f in docs.get("features", []) if f not in manifest.get("features", {})]
    if missing:
        found.append(f"docs.rs features {missing} are not features of the crate")
    return found


def main():
    started = time.monotonic()
    version = tomllib.load(open(os.path.join(ROOT, "Cargo.toml"), "rb"))["workspace"]["package"]["version"]
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip())
    args = ["publish", "--dry-run", "-p", "sqs-forwarder"] + (["--allow-dirty"] if dirty else [])
    done, took = cargo(args)
    ok = check(done.returncode == 0, f"cargo {' '.join(args)} ({took:.0f} s)"
               + ("" if done.returncode == 0 else f": {done.stderr[-1500:]}"))
    warned = re.findall(r"^warning: (.*)\n\s+--> (src/\S+)", done.stderr, re.M)
    check(ok and not warned, "the verification build (default features) has no warnings"
          + (f": {warned[:5]}" if warned else ""))
    # cargo writes a dry run's package under package/tmp-crate/ (older: package/)
    crate = next((p for p in (os.path.join(TARGET, "package", "tmp-crate", f"sqs-forwarder-{version}.crate"),
                              os.path.join(TARGET, "package", f"sqs-forwarder-{version}.crate"))
                  if os.path.isfile(p)), "")
    if not check(ok and crate, f"the packed crate {os.path.relpath(crate, ROOT) if crate else '(not found)'}"):
        CHECKS.finish()

    scratch = tempfile.mkdtemp(prefix="crate-check-")
    with tarfile.open(crate) as tar:
        prefix = f"sqs-forwarder-{version}/"
        names = [m.name[len(prefix):] for m in tar.getmembers() if m.isfile()]
        tar.extractall(scratch, filter="data")
    unpacked = os.path.join(scratch, f"sqs-forwarder-{version}")
    manifest = tomllib.load(open(os.path.join(unpacked, "Cargo.toml"), "rb"))
    found = package_problems(names, manifest)
    size = os.path.getsize(crate)
    check(not found, f"the package ({len(names)} files, {size // 1024} KiB) holds the manifest, README.md, "
          "LICENSE and the library's sources only, with crates.io's and docs.rs's metadata"
          + (f": {found}" if found else ""))
    check(package_problems(names + ["tests/faults.rs"], manifest), "negative: a test file in the package fails")
    bare = {k: v for k, v in manifest.items() if k != "package"}
    check(package_problems(names, bare), "negative: a manifest without its metadata fails")

    done, took = cargo(["clippy", "-p", "sqs-forwarder", "--no-default-features", "--", "-D", "warnings"])
    check(done.returncode == 0, f"the core without features builds, warnings denied ({took:.0f} s)"
          + ("" if done.returncode == 0 else f": {done.stderr[-1500:]}"))

    user = os.path.join(scratch, "crate-user")
    shutil.copytree(os.path.join(ROOT, "examples", "crate-user"), user)
    with open(os.path.join(user, "Cargo.toml"), "a", encoding="utf-8") as f:
        f.write(f'\n[patch.crates-io]\nsqs-forwarder = {{ path = "{unpacked}" }}\n')
    # The workspace's versions of the dependencies, so that the build finds
    # what the verification built; cargo drops the entries it does not need.
    shutil.copyfile(os.path.join(ROOT, "Cargo.lock"), os.path.join(user, "Cargo.lock"))
    done, took = cargo(["build"], cwd=user)
    ok = check(done.returncode == 0, f"examples/crate-user builds on the unpacked package ({took:.0f} s)"
               + ("" if done.returncode == 0 else f": {done.stderr[-1500:]}"))
    lock = open(os.path.join(user, "Cargo.lock"), encoding="utf-8").read()
    check(re.search(r'name = "sqs-forwarder"\nversion = "' + re.escape(version) + r'"\n(?!source)', lock),
          "it took sqs-forwarder from the unpacked package, not from crates.io")
    if ok:
        endpoint = os.environ.get("SQS_TEST_ENDPOINT") or subprocess.run(
            [os.path.join(ROOT, "scripts", "local-sqs.sh"), "start"], capture_output=True, text=True,
            check=True).stdout.strip()
        sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test",
                           aws_secret_access_key="test")
        url = sqs.create_queue(QueueName=f"crate-user-{int(time.time() * 1000)}")["QueueUrl"]
        env = dict(os.environ, QUEUE_URL=url, AWS_ENDPOINT_URL_SQS=endpoint, AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test")
        run = subprocess.run([os.path.join(TARGET, "debug", "crate-user"), "25"], env=env, capture_output=True,
                             text=True, timeout=120)
        bodies, empty = set(), 0
        while empty < 2:
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                      MessageAttributeNames=["All"]).get("Messages", [])
            empty = empty + 1 if not got else 0
            for m in got:
                if m.get("MessageAttributes", {}).get("source", {}).get("StringValue") == "crate-user":
                    bodies.add(m["Body"])
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        sqs.delete_queue(QueueUrl=url)
        want = {f'{{"n":{i}}}' for i in range(25)}
        check(run.returncode == 0 and bodies == want,
              f"crate-user sends through the local SQS: {run.stdout.strip()!r}, {len(bodies)} of 25 read back "
              "with their attribute" + ("" if run.returncode == 0 else f": {run.stderr[-500:]}"))
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"-- time: {time.monotonic() - started:.0f} s for the crate checks", flush=True)
    CHECKS.finish()


if __name__ == "__main__":
    main()
