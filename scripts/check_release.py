#!/usr/bin/env python3
"""Check a release folder written by scripts/release.py (run it through
scripts/check-release.sh):

1. SHA256SUMS: every file of the folder is listed, and every checksum
   matches; the archive holds the same files.
2. Each function's zip (each template's CodeUri) holds one `bootstrap`,
   executable (the mode the zip gives it), a 64-bit ELF for the template's
   architecture read from its header, under the documented size, asking for
   no newer glibc than the runtime's (scripts/deploy_build.py's checks);
   the replay command's zip one executable `replay`, an ELF for the same
   architecture.
3. The arm64 bootstraps answer their sample events (scripts/samples.py)
   under qemu against the local SQS, with the runtime-API harness, and the
   replay command runs (`--help`).
4. Reproducible: the zips and the archive written again from the same
   binaries are the same bytes; BUILD-INFO's checksums are the binaries';
   no binary holds a path of the build machine (the checkout, Cargo's home)
   and the remapped ones are there.
5. Each template: no `BuildMethod` left, every CodeUri a zip of the folder,
   cfn-lint passes, `sam package` uploads it as it is to an S3 bucket (the
   local S3) and SAM's translator takes the packaged template offline.
6. The SAR's requirements (scripts/check_sar.py).

Negative tests prove the checks of 1, 2, 4 and 5 can fail. Prints one line
per check and `release: N passed, M failed`.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile

import boto3
from cfnlint.decode import cfn_yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_env  # noqa: E402
import check_sar  # noqa: E402
import deploy_build  # noqa: E402
import release  # noqa: E402
from checks import Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKS = Checks("release")
check = CHECKS.check
# The runs of the built functions are deploy_build.py's; their checks count here.
deploy_build.CHECKS, deploy_build.check = CHECKS, CHECKS.check
ELF_MACHINE = {"arm64": "EM_AARCH64", "x86_64": "EM_X86_64"}
BUNDLE = re.compile(r"sqs-forwarder-.+\.tar\.gz(\.sha256)?")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---- 1. checksums ------------------------------------------------------------------

def checksum_problems(folder):
    """Files whose checksum does not match SHA256SUMS, files it misses, and
    lines naming no file."""
    sums_path = os.path.join(folder, "SHA256SUMS")
    if not os.path.isfile(sums_path):
        return ["no SHA256SUMS"]
    listed, found = {}, []
    for line in open(sums_path, encoding="utf-8").read().splitlines():
        m = re.fullmatch(r"([0-9a-f]{64})  (.+)", line)
        if not m:
            found.append(f"line {line!r} is not '<sha256>  <path>'")
            continue
        listed[m.group(2)] = m.group(1)
    present = {rel for rel in release.files_under(folder) if rel != "SHA256SUMS" and not BUNDLE.fullmatch(rel)}
    found += [f"{rel} is not in SHA256SUMS" for rel in sorted(present - set(listed))]
    found += [f"{rel} is listed but missing" for rel in sorted(set(listed) - present)]
    found += [f"{rel}: checksum does not match" for rel in sorted(present & set(listed))
              if sha256(open(os.path.join(folder, rel), "rb").read()) != listed[rel]]
    return found


def bundle_problems(folder, version):
    """What the archive holds that the folder does not, or the other way."""
    path = os.path.join(folder, f"sqs-forwarder-{version}.tar.gz")
    if not os.path.isfile(path):
        return [f"no {os.path.basename(path)}"]
    prefix, found, names = f"sqs-forwarder-{version}/", [], set()
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            rel = m.name[len(prefix):] if m.name.startswith(prefix) else None
            if rel is None or not m.isfile():
                found.append(f"{m.name}: not a file under {prefix}")
                continue
            names.add(rel)
            disk = os.path.join(folder, rel)
            if not os.path.isfile(disk) or open(disk, "rb").read() != tar.extractfile(m).read():
                found.append(f"{rel} differs from the folder's")
    missing = {rel for rel in release.files_under(folder) if not BUNDLE.fullmatch(rel)} - names
    return found + [f"{rel} is not in the archive" for rel in sorted(missing)]


# ---- 2. the zips -------------------------------------------------------------------

def unzip_one(zip_path, name, into):
    """Extract the zip's one entry `name` into `into` with the mode the zip
    gives it; (path, problems)."""
    try:
        z = zipfile.ZipFile(zip_path)
    except (OSError, zipfile.BadZipFile) as e:
        return None, [f"not a zip ({e})"]
    with z:
        names = z.namelist()
        if names != [name]:
            return None, [f"holds {names}, not one {name}"]
        info = z.getinfo(name)
        path = os.path.join(into, name)
        os.makedirs(into, exist_ok=True)
        open(path, "wb").write(z.read(name))
        mode = (info.external_attr >> 16) & 0o7777 if info.create_system == 3 else 0
        os.chmod(path, mode)
        return path, [] if mode & 0o111 else [f"{name} is not executable in the zip (mode {oct(mode)})"]


def zip_problems(zip_path, name, arch, runtime, limit, into):
    """(extracted path, problems) of a zip that must hold one executable
    `name`, an ELF for `arch`."""
    path, found = unzip_one(zip_path, name, into)
    if not path:
        return None, found
    checks = deploy_build.inspect(path, arch, deploy_build.RUNTIME_GLIBC.get(runtime), limit)
    if limit is None:  # the replay command: no Lambda size limit
        checks.pop("size")
    found += [what for ok, what in checks.values() if not ok]
    return path, found


# ---- 4. reproducible ---------------------------------------------------------------

def build_info(folder):
    """BUILD-INFO's source date and binary checksums ({(zip, name): sha})."""
    text = open(os.path.join(folder, "BUILD-INFO"), encoding="utf-8").read()
    epoch = int(re.search(r"^source date: (\d+)$", text, re.M).group(1))
    sums = {(m.group(2), m.group(3)): m.group(1)
            for m in re.finditer(r"^  ([0-9a-f]{64})  (\S+):(\S+)$", text, re.M)}
    return epoch, sums


def path_problems(data):
    """Build-machine paths left in a binary, and whether the remapped
    prefixes are there (a binary without either would prove nothing)."""
    found = []
    for what, path in (("the checkout", os.path.realpath(ROOT)), ("Cargo's home", build_env.cargo_home())):
        if path.encode() in data:
            found.append(f"holds {what}'s path {path}")
    if f"{build_env.CARGO_HOME_AS}/registry/src/".encode() not in data:
        found.append(f"holds no {build_env.CARGO_HOME_AS}/registry/src/ path (was it remapped?)")
    return found


# ---- 5. the templates --------------------------------------------------------------

def walk_keys(node, key):
    if isinstance(node, dict):
        return (1 if key in node else 0) + sum(walk_keys(v, key) for v in node.values())
    if isinstance(node, list):
        return sum(walk_keys(v, key) for v in node)
    return 0


def template_problems(tpl, folder, arch):
    """A release template's own problems: a build step left, a CodeUri that
    is not a zip of the folder, another architecture."""
    found = []
    if walk_keys(tpl, "BuildMethod"):
        found.append(f"{walk_keys(tpl, 'BuildMethod')} BuildMethod left")
    archs = (tpl.get("Globals", {}).get("Function", {}) or {}).get("Architectures")
    if archs != [arch]:
        found.append(f"Globals Architectures {archs}, not [{arch}]")
    for name, r in tpl["Resources"].items():
        if r.get("Type") != "AWS::Serverless::Function":
            continue
        code = str(r.get("Properties", {}).get("CodeUri", ""))
        if not (code.startswith(f"{arch}/") and code.endswith("/bootstrap.zip")
                and os.path.isfile(os.path.join(folder, code))):
            found.append(f"{name}: CodeUri {code!r} is not a {arch}/<function>/bootstrap.zip of the folder")
        if r.get("Properties", {}).get("Architectures") not in (None, [arch]):
            found.append(f"{name}: Architectures {r['Properties']['Architectures']}")
    return found


def sam_package(tpl_path, endpoint, bucket, out_path):
    """`sam package` of the release template to a bucket of the local S3;
    (ok, output)."""
    env = dict(os.environ, AWS_ENDPOINT_URL_S3=endpoint, AWS_REGION="us-east-1", AWS_DEFAULT_REGION="us-east-1",
               AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", SAM_CLI_TELEMETRY="0")
    done = subprocess.run(["sam", "package", "--template-file", tpl_path, "--s3-bucket", bucket,
                           "--output-template-file", out_path, "--region", "us-east-1"],
                          capture_output=True, text=True, env=env)
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def check_template(folder, arch, tpl_name, version, endpoint, licence):
    """Section 5 and 6 for one release template; its loaded form."""
    tpl_path = os.path.join(folder, tpl_name)
    tpl = cfn_yaml.load(tpl_path)
    found = template_problems(tpl, folder, arch)
    check(not found, f"{tpl_name}: no BuildMethod, every CodeUri a {arch} zip of the release"
          + (f": {found}" if found else ""))
    lint = subprocess.run(["cfn-lint", tpl_path], capture_output=True, text=True)
    check(lint.returncode == 0, f"{tpl_name}: cfn-lint" + ("" if lint.returncode == 0 else f": {lint.stdout[-800:]}"))
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test",
                      aws_secret_access_key="test")
    bucket = f"release-check-{arch.replace('_', '-')}-{int(time.time() * 1000)}"
    s3.create_bucket(Bucket=bucket)
    packaged_path = os.path.join(tempfile.mkdtemp(prefix="release-packaged-"), "packaged.yaml")
    ok, out = sam_package(tpl_path, endpoint, bucket, packaged_path)
    check(ok, f"{tpl_name}: sam package uploads it as it is (no build) to a bucket of the local S3"
          + ("" if ok else f": {out[-800:]}"))
    if not ok:
        return tpl
    packaged = cfn_yaml.load(packaged_path)
    uploaded = []
    for name, r in packaged["Resources"].items():
        if r.get("Type") == "AWS::Serverless::Function":
            uri = str(r["Properties"]["CodeUri"])
            key = uri.split(f"s3://{bucket}/", 1)[-1]
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read() if uri.startswith(f"s3://{bucket}/") else b""
            local = open(os.path.join(folder, str(tpl["Resources"][name]["Properties"]["CodeUri"])), "rb").read()
            uploaded.append(body == local)
    app = check_sar.metadata(packaged)
    check(uploaded and all(uploaded) and all(str(app.get(f, "")).startswith("s3://") for f in ("ReadmeUrl", "LicenseUrl")),
          f"{tpl_name}: the packaged CodeUris hold the release's zips byte for byte ({sum(uploaded)} of "
          f"{len(uploaded)}), the readme and licence uploaded")
    try:
        translated = translate(packaged)
        fns = [r for r in translated["Resources"].values() if r.get("Type") == "AWS::Lambda::Function"]
        good = fns and all(f["Properties"].get("Architectures") == [arch] and "S3Key" in f["Properties"]["Code"]
                           for f in fns)
        check(good, f"{tpl_name}: SAM's translator takes the packaged template offline ({len(fns)} "
              f"functions, {arch}, code in S3)")
    except Exception as e:  # samtranslator's InvalidDocumentException and the like
        check(False, f"{tpl_name}: SAM's translator takes the packaged template offline: {e}")
        return tpl
    check_sar.check_all(check, tpl, open(packaged_path, encoding="utf-8").read(), translated, version, folder,
                        licence, os.path.join(ROOT, "docs", "releasing.md"))
    return tpl


def translate(packaged):
    """The packaged template as CloudFormation gets it (offline)."""
    import check_template

    t = json.loads(json.dumps(packaged))
    return check_template.sam_translate(t)


# ---- the run -----------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    args = ap.parse_args()
    folder = os.path.abspath(args.folder)
    started = time.monotonic()
    text = open(os.path.join(folder, "BUILD-INFO"), encoding="utf-8").read()
    version = re.match(r"sqs-forwarder (\S+)", text).group(1)
    if "replay command: not built" in text:
        print("-- the replay command was left out of this release (--no-replay): its zip is not checked", flush=True)
    licence = tomllib.load(open(os.path.join(ROOT, "Cargo.toml"), "rb"))["workspace"]["package"]["license"]
    endpoint = os.environ.get("SQS_TEST_ENDPOINT") or subprocess.run(
        [os.path.join(ROOT, "scripts", "local-sqs.sh"), "start"], capture_output=True, text=True,
        check=True).stdout.strip()

    found = release.version_problems(version)
    check(not found, f"{version} is the project's version everywhere (Cargo.toml, every crate, the template, "
          "CHANGELOG.md)" + (f": {found}" if found else ""))
    check(release.version_problems(version + "-other"), "negative: another version is refused by the release")
    found = checksum_problems(folder)
    check(not found, "SHA256SUMS lists every file and every checksum matches" + (f": {found}" if found else ""))
    found = bundle_problems(folder, version)
    check(not found, f"sqs-forwarder-{version}.tar.gz holds the folder's files" + (f": {found}" if found else ""))
    epoch, info_sums = build_info(folder)
    source = cfn_yaml.load(os.path.join(ROOT, "template.yaml"))
    g = source.get("Globals", {}).get("Function", {})
    runtime, limit = g.get("Runtime"), deploy_build.size_limit()
    rows = deploy_build.dashboard_metrics(source)
    scratch = tempfile.mkdtemp(prefix="release-check-")
    tpls = sorted(n for n in os.listdir(folder) if re.fullmatch(r"template(-[a-z0-9_]+)?\.yaml", n))
    check(tpls and tpls[-1] == "template.yaml", f"templates {tpls}, template.yaml (arm64) among them")
    sample = None
    for tpl_name in tpls:
        arch = "arm64" if tpl_name == "template.yaml" else tpl_name[len("template-"):-len(".yaml")]
        tpl = check_template(folder, arch, tpl_name, version, endpoint, licence)
        runner = deploy_build.prepare(arch) if arch == "arm64" else None
        replay = [] if "replay command: not built" in text else [("replay", f"{arch}/replay.zip", "replay")]
        zips = [(n, str(r["Properties"]["CodeUri"]), "bootstrap") for n, r in tpl["Resources"].items()
                if r.get("Type") == "AWS::Serverless::Function"] + replay
        for name, rel, inside in zips:
            into = os.path.join(scratch, os.path.dirname(rel), os.path.basename(rel)[:-4])
            path, found = zip_problems(os.path.join(folder, rel), inside, arch, runtime,
                                       limit if inside == "bootstrap" else None, into)
            check(not found, f"{rel}: one {inside}, executable, a 64-bit ELF for {arch}"
                  + (" within the size and glibc limits" if inside == "bootstrap" else "")
                  + (f": {found}" if found else ""))
            if not path:
                continue
            data = open(path, "rb").read()
            check(info_sums.get((rel, inside)) == sha256(data), f"{rel}: BUILD-INFO has its binary's SHA-256")
            again = release.zip_bytes(inside, data, epoch)
            check(again == open(os.path.join(folder, rel), "rb").read(),
                  f"{rel}: written again from its binary, the same bytes")
            found = path_problems(data)
            check(not found, f"{rel}: no build-machine path in the binary, the remapped ones there"
                  + (f": {found}" if found else ""))
            sample = sample or (path, rel, inside, arch)
            if arch != "arm64":
                continue  # only arm64 runs here (under qemu); x86_64 binaries are checked, not run
            if inside == "bootstrap":
                crate = rel.split("/")[1]
                deploy_build.run_artifact(f"{rel}", crate, path, runner, endpoint, rows)
            else:
                done = subprocess.run(runner.split() + [path, "--help"], capture_output=True, text=True, timeout=120)
                how = f"under {runner.split()[0]}" if runner else "natively"
                check(done.returncode == 0 and "Usage" in done.stdout, f"{rel}: replay --help runs {how}"
                      + ("" if done.returncode == 0 else f": {done.stderr[-300:]}"))
    bundle = f"sqs-forwarder-{version}.tar.gz"
    again = release.tar_gz_bytes(folder, f"sqs-forwarder-{version}", epoch, {bundle, bundle + ".sha256"})
    check(again == open(os.path.join(folder, bundle), "rb").read(),
          "the archive, written again from the folder, the same bytes")
    listed = open(os.path.join(folder, bundle + ".sha256"), encoding="utf-8").read()
    check(listed == f"{sha256(again)}  {bundle}\n", f"{bundle}.sha256 is the archive's checksum")
    negative(folder, scratch, sample, runtime, limit)
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"-- time: {time.monotonic() - started:.0f} s for the release checks", flush=True)
    CHECKS.finish()


def negative(folder, scratch, sample, runtime, limit):
    """Each check of sections 1, 2, 4 and 5 fails on what it must refuse."""
    copy_dir = os.path.join(scratch, "mutated")
    shutil.copytree(folder, copy_dir)
    first = next(iter(sorted(r for r in release.files_under(copy_dir) if r.endswith(".zip"))))
    with open(os.path.join(copy_dir, first), "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0xFF]))
    check(checksum_problems(copy_dir), "negative: a changed byte in a zip fails SHA256SUMS")
    open(os.path.join(copy_dir, "extra.txt"), "w").write("x")
    check(any("not in SHA256SUMS" in p for p in checksum_problems(copy_dir)), "negative: an unlisted file fails")
    path, rel, inside, arch = sample
    data = open(path, "rb").read()
    bad = os.path.join(scratch, "mode.zip")
    with zipfile.ZipFile(bad, "w") as z:
        info = zipfile.ZipInfo(inside)
        info.create_system, info.external_attr = 3, 0o100644 << 16
        z.writestr(info, data)
    check(zip_problems(bad, inside, arch, runtime, limit, os.path.join(scratch, "n1"))[1],
          "negative: a bootstrap without the executable bit fails")
    other = next(a for a in ELF_MACHINE if a != arch)
    check(zip_problems(os.path.join(folder, rel), inside, other, runtime, limit, os.path.join(scratch, "n2"))[1],
          f"negative: the {arch} zip fails the ELF check for {other}")
    two = os.path.join(scratch, "two.zip")
    with zipfile.ZipFile(two, "w") as z:
        z.writestr(inside, data)
        z.writestr("README.md", "x")
    check(unzip_one(two, inside, os.path.join(scratch, "n3"))[1], "negative: a zip with two files fails")
    text_zip = os.path.join(scratch, "text.zip")
    open(text_zip, "wb").write(release.zip_bytes(inside, b"#!/bin/sh\necho hi\n", 0))
    check(zip_problems(text_zip, inside, arch, runtime, limit, os.path.join(scratch, "n4"))[1],
          "negative: a shell script as bootstrap fails the ELF check")
    check(path_problems(data + os.path.realpath(ROOT).encode()), "negative: a binary holding the checkout's path fails")
    check(path_problems(b"\x7fELF no paths"), "negative: a binary without the remapped paths fails")
    tpl = cfn_yaml.load(os.path.join(folder, "template.yaml"))
    fn = next(r for r in tpl["Resources"].values() if r.get("Type") == "AWS::Serverless::Function")
    fn.setdefault("Metadata", {})["BuildMethod"] = "rust-cargolambda"
    check(template_problems(tpl, folder, "arm64"), "negative: a BuildMethod left fails")
    fn["Metadata"].pop("BuildMethod")
    fn["Properties"]["CodeUri"] = "functions/kinesis-to-sqs"
    check(template_problems(tpl, folder, "arm64"), "negative: a CodeUri that is a crate folder fails")


if __name__ == "__main__":
    main()
