#!/usr/bin/env python3
"""Build a release of sqs-forwarder (run it through scripts/release.sh).

1. Checks the version: VERSION is every crate's version (Cargo.toml's
   `[workspace.package]`), the template's `SemanticVersion` (and its
   `SourceCodeUrl` names the tag `vVERSION`), and CHANGELOG.md has its
   section; and the checkout is clean (`--allow-dirty` to build anyway; the
   build info says so).
2. Builds each function of template.yaml and the replay command with
   `cargo lambda build --release` for each architecture, the way `sam build`
   builds them (in the crate's folder, the workspace's target directory),
   with the flags of scripts/build_env.py: the same commit and toolchain
   give the same binaries wherever they are built.
3. Writes into the output folder (default `dist/`):

       template.yaml                   the template, each CodeUri a zip below, no build step (arm64)
       template-x86_64.yaml            the same for x86_64 (with --x86_64)
       <arch>/<function>/bootstrap.zip the function: one executable `bootstrap`
       <arch>/replay.zip               the replay command: one executable `replay`
       README.md, LICENSE, CHANGELOG.md  (the template's ReadmeUrl and LicenseUrl)
       BUILD-INFO                      version, commit, toolchain, flags, each binary's SHA-256
       SHA256SUMS                      every file above (`sha256sum -c SHA256SUMS`)
       sqs-forwarder-VERSION.tar.gz    all of the above in one folder sqs-forwarder-VERSION/
       sqs-forwarder-VERSION.tar.gz.sha256  the archive's SHA-256

   The archives are written byte for byte the same for the same input:
   entries sorted, every time the commit's (SOURCE_DATE_EPOCH when set),
   fixed owners and modes, gzip without a name or time. What can still
   differ is written in docs/releasing.md ("Reproducible").
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?")
# The replay command: a crate folder and its binary.
REPLAY = ("replay", "replay")
# Copied beside the templates: the SAR's ReadmeUrl and LicenseUrl, and the changelog.
DOCS = ["README.md", "LICENSE", "CHANGELOG.md"]


class ReleaseError(Exception):
    """Why a release cannot be built; printed as is."""


def run(cmd, cwd=ROOT, **kw):
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True, **kw).stdout.strip()


# ---- the version -------------------------------------------------------------

def load_template(path):
    from cfnlint.decode import cfn_yaml

    return cfn_yaml.load(path)


def sar_metadata(tpl):
    return (tpl.get("Metadata") or {}).get("AWS::ServerlessRepo::Application") or {}


def version_problems(version, root=ROOT):
    """Where `version` is not the project's version (empty: everywhere it is)."""
    found = []
    if not SEMVER.fullmatch(version):
        found.append(f"{version!r} is not a semantic version (MAJOR.MINOR.PATCH)")
    cargo = tomllib.load(open(os.path.join(root, "Cargo.toml"), "rb"))
    ws = cargo.get("workspace", {}).get("package", {}).get("version")
    if ws != version:
        found.append(f"Cargo.toml [workspace.package] version is {ws!r}")
    meta = json.loads(run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=root))
    for p in meta["packages"]:
        if p["version"] != version:
            found.append(f"crate {p['name']} is version {p['version']}")
    app = sar_metadata(load_template(os.path.join(root, "template.yaml")))
    if str(app.get("SemanticVersion")) != version:
        found.append(f"template.yaml SemanticVersion is {app.get('SemanticVersion')!r}")
    if not str(app.get("SourceCodeUrl", "")).endswith(f"/tree/v{version}"):
        found.append(f"template.yaml SourceCodeUrl {app.get('SourceCodeUrl')!r} does not name the tag v{version}")
    repo = cargo.get("workspace", {}).get("package", {}).get("repository")
    if app.get("HomePageUrl") != repo:
        found.append(f"template.yaml HomePageUrl {app.get('HomePageUrl')!r} is not Cargo.toml's repository {repo!r}")
    changelog = open(os.path.join(root, "CHANGELOG.md"), encoding="utf-8").read()
    if not re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M):
        found.append(f"CHANGELOG.md has no section '## [{version}] - YYYY-MM-DD'")
    if not re.search(rf"^\[{re.escape(version)}\]: {re.escape(repo or '')}/", changelog, re.M):
        found.append(f"CHANGELOG.md has no link '[{version}]: {repo}/...'")
    return found


# ---- building ----------------------------------------------------------------

def functions(tpl):
    """(logical id, crate folder) of every function in the template, in order."""
    return [(name, str(r["Properties"]["CodeUri"]).rstrip("/"))
            for name, r in tpl["Resources"].items() if r.get("Type") == "AWS::Serverless::Function"]


def bin_name(folder):
    """The one binary of the crate in `folder` (what cargo-lambda builds)."""
    manifest = tomllib.load(open(os.path.join(ROOT, folder, "Cargo.toml"), "rb"))
    bins = [b["name"] for b in manifest.get("bin", [])] or [manifest["package"]["name"]]
    if len(bins) != 1:
        raise ReleaseError(f"{folder} has {len(bins)} binaries, not one")
    return bins[0]


def build(folder, arch, env, log):
    """Build the crate in `folder` for `arch`; the path of its binary."""
    flag = build_env.ARCHES[arch][0]
    started = time.monotonic()
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"\n== cargo lambda build --release {flag} in {folder}\n")
        out.flush()
        done = subprocess.run(["cargo", "lambda", "build", "--release", flag], cwd=os.path.join(ROOT, folder),
                              env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = "".join(open(log, encoding="utf-8").readlines()[-25:])
        raise ReleaseError(f"cargo lambda build failed in {folder} ({arch}); the end of {log}:\n{tail}")
    path = os.path.join(env["CARGO_TARGET_DIR"], "lambda", bin_name(folder), "bootstrap")
    print(f"-- built {folder} for {arch} ({time.monotonic() - started:.0f} s)", flush=True)
    return path


def toolchain():
    """What built the binaries: the lines BUILD-INFO gives."""
    zig = subprocess.run([sys.executable, "-m", "ziglang", "version"], capture_output=True, text=True)
    return [f"rustc: {run(['rustc', '-V'])}",
            f"cargo: {run(['cargo', '-V'])}",
            f"cargo-lambda: {run(['cargo', 'lambda', '--version'])}",
            f"zig: {zig.stdout.strip() or 'unknown'}"]


# ---- writing, byte for byte the same -------------------------------------------

def zip_bytes(name, data, epoch):
    """A zip holding one executable file `name`, the same bytes for the same input."""
    when = time.gmtime(max(epoch, 315532800))[:6]  # zip times start in 1980
    info = zipfile.ZipInfo(name, date_time=when)
    info.create_system = 3  # Unix, so that the mode below is read
    info.external_attr = (0o100755 & 0xFFFF) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return buf.getvalue()


def tar_gz_bytes(folder, prefix, epoch, skip=()):
    """Every file under `folder` (not those in `skip`) in a .tar.gz below
    `prefix/`, the same bytes for the same files."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(files_under(folder)):
            if rel in skip:
                continue
            data = open(os.path.join(folder, rel), "rb").read()
            info = tarfile.TarInfo(f"{prefix}/{rel}")
            info.size, info.mtime, info.mode = len(data), epoch, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def files_under(folder):
    for base, _, names in os.walk(folder):
        for n in names:
            yield os.path.relpath(os.path.join(base, n), folder)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def packaged_template(text, arch, zips):
    """template.yaml's text with each function's CodeUri the zip in `zips`
    (crate folder -> path), no BuildMethod, and `arch` for the functions.
    Edits the text (comments stay); the checks read the result back."""
    for folder, zip_path in zips.items():
        text, n = re.subn(rf"^(\s+CodeUri:\s*){re.escape(folder)}/?\s*$", rf"\g<1>{zip_path}", text, flags=re.M)
        if n != 1:
            raise ReleaseError(f"template.yaml: {n} lines 'CodeUri: {folder}', expected one")
    text, n = re.subn(r"^\s+BuildMethod:\s*rust-cargolambda\s*\n", "", text, flags=re.M)
    if n != len(zips):
        raise ReleaseError(f"template.yaml: {n} 'BuildMethod: rust-cargolambda' lines for {len(zips)} functions")
    if arch != "arm64":
        text, n = re.subn(r"^(\s+Architectures:\s*)\[arm64\]\s*$", rf"\g<1>[{arch}]", text, flags=re.M)
        if n != 1:
            raise ReleaseError(f"template.yaml: {n} 'Architectures: [arm64]' lines, expected one (Globals)")
    return text


def template_name(arch):
    return "template.yaml" if arch == "arm64" else f"template-{arch}.yaml"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("version")
    ap.add_argument("--x86_64", action="store_true", help="also build for x86_64")
    ap.add_argument("--out", default=os.path.join(ROOT, "dist"), help="output folder (default dist/)")
    ap.add_argument("--allow-dirty", action="store_true", help="build from a checkout with uncommitted changes")
    ap.add_argument("--no-replay", action="store_true",
                    help="leave the replay command out (the test run does: its build is the longest)")
    args = ap.parse_args()
    version, out = args.version, os.path.abspath(args.out)
    started = time.monotonic()

    problems = version_problems(version)
    if problems:
        raise ReleaseError("version " + version + " is not the project's version:\n  " + "\n  ".join(problems))
    commit = run(["git", "rev-parse", "HEAD"])
    dirty = bool(run(["git", "status", "--porcelain"]))
    if dirty and not args.allow_dirty:
        raise ReleaseError("the checkout has uncommitted changes: commit them, or pass --allow-dirty")
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or run(["git", "log", "-1", "--format=%ct"]))
    print(f"-- release {version} of {commit}{' (with uncommitted changes)' if dirty else ''}", flush=True)

    tpl_text = open(os.path.join(ROOT, "template.yaml"), encoding="utf-8").read()
    fns = functions(load_template(os.path.join(ROOT, "template.yaml")))
    arches = ["arm64"] + (["x86_64"] if args.x86_64 else [])
    if os.path.exists(out):
        if os.listdir(out) and not os.path.isfile(os.path.join(out, "BUILD-INFO")):
            raise ReleaseError(f"{out} is not empty and holds no earlier release: choose another --out")
        shutil.rmtree(out)
    os.makedirs(os.path.join(ROOT, ".local"), exist_ok=True)
    log = os.path.join(ROOT, ".local", "release-build.log")
    open(log, "w").close()
    target = build_env.target_dir(ROOT)
    binaries = []  # (zip path, name inside, sha256 of the binary)
    for arch in arches:
        triple = build_env.ARCHES[arch][1]
        run(["rustup", "target", "add", triple])
        env = build_env.environ(ROOT, arch, target=target)
        zips = {}
        for _, folder in fns + ([] if args.no_replay else [(None, REPLAY[0])]):
            data = open(build(folder, arch, env, log), "rb").read()
            inside = "bootstrap" if folder != REPLAY[0] else REPLAY[1]
            rel = f"{arch}/{os.path.basename(folder)}/bootstrap.zip" if folder != REPLAY[0] else f"{arch}/replay.zip"
            os.makedirs(os.path.dirname(os.path.join(out, rel)), exist_ok=True)
            open(os.path.join(out, rel), "wb").write(zip_bytes(inside, data, epoch))
            binaries.append((rel, inside, sha256(data)))
            if folder != REPLAY[0]:
                zips[folder] = rel
        open(os.path.join(out, template_name(arch)), "w", encoding="utf-8").write(
            packaged_template(tpl_text, arch, zips))
    for doc in DOCS:
        shutil.copyfile(os.path.join(ROOT, doc), os.path.join(out, doc))
    # The flags without this machine's paths (they are what the remapping hides).
    flags = [f.replace(os.path.realpath(ROOT), "<checkout>").replace(build_env.cargo_home(), "<cargo home>")
             .replace(target, "<target>") for f in build_env.rustflags(ROOT, "arm64", target)[2:]]
    info = [f"sqs-forwarder {version}", f"commit: {commit}{' with uncommitted changes' if dirty else ''}",
            f"source date: {epoch}", *toolchain(),
            "replay command: " + ("not built (--no-replay)" if args.no_replay else "built"),
            "build: cargo lambda build --release --<arch>, in each crate's folder, with -C target-cpu=<the arch's> "
            + " ".join(flags), "binaries (SHA-256 of the file inside each zip):"]
    info += [f"  {digest}  {rel}:{inside}" for rel, inside, digest in binaries]
    open(os.path.join(out, "BUILD-INFO"), "w", encoding="utf-8").write("\n".join(info) + "\n")
    sums = [f"{sha256(open(os.path.join(out, rel), 'rb').read())}  {rel}" for rel in sorted(files_under(out))]
    open(os.path.join(out, "SHA256SUMS"), "w", encoding="utf-8").write("\n".join(sums) + "\n")
    bundle = f"sqs-forwarder-{version}.tar.gz"
    data = tar_gz_bytes(out, f"sqs-forwarder-{version}", epoch, {bundle})
    open(os.path.join(out, bundle), "wb").write(data)
    open(os.path.join(out, bundle + ".sha256"), "w", encoding="utf-8").write(f"{sha256(data)}  {bundle}\n")
    print(f"-- wrote {out}: {len(sums)} files in SHA256SUMS, and {bundle} "
          f"({(time.monotonic() - started) / 60:.1f} min)", flush=True)
    print("\n".join(f"   {line}" for line in sums), flush=True)


if __name__ == "__main__":
    try:
        main()
    except (ReleaseError, subprocess.CalledProcessError) as e:
        detail = e.stderr if isinstance(e, subprocess.CalledProcessError) else ""
        print(f"release: {e}{(': ' + detail.strip()) if detail else ''}", file=sys.stderr)
        sys.exit(1)
