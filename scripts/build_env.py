"""The environment of a release build, shared by scripts/release.py (which
builds the release) and scripts/deploy_build.py (whose `sam build` must
then find every crate already built: the same flags, the same target
directory, so cargo rebuilds nothing).

cargo-lambda builds for a Lambda architecture with `-C target-cpu` of that
architecture's oldest Lambda CPU (its own `build.rustflags`); the release
keeps that and adds `--remap-path-prefix` for the two places a build
machine's paths enter a binary (panic locations, generated sources): the
checkout (and its `target/`) and Cargo's home (the crates' sources). With
them, the same commit and toolchain give the same binary in any directory
on any machine. Flags given in the environment replace cargo-lambda's
`build.rustflags`, which is why its `target-cpu` is repeated here.
"""

import json
import os
import subprocess

# Lambda architecture -> (cargo-lambda's flag, Rust target, the target CPU
# cargo-lambda builds for by default: Graviton2, and Haswell for x86_64).
ARCHES = {
    "arm64": ("--arm64", "aarch64-unknown-linux-gnu", "neoverse-n1"),
    "x86_64": ("--x86-64", "x86_64-unknown-linux-gnu", "haswell"),
}

# What the build machine's paths become inside the binaries.
CHECKOUT_AS = "/sqs-forwarder"
CARGO_HOME_AS = "/cargo"


def cargo_home():
    return os.path.realpath(os.environ.get("CARGO_HOME") or os.path.expanduser("~/.cargo"))


def target_dir(root):
    """The workspace's target directory, as cargo and `sam build` use it."""
    out = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return os.path.realpath(json.loads(out)["target_directory"])


def rustflags(root, arch, target=None):
    """The flags of a release build for `arch`, as a list."""
    root = os.path.realpath(root)
    target = os.path.realpath(target or os.path.join(root, "target"))
    flags = ["-C", f"target-cpu={ARCHES[arch][2]}",
             f"--remap-path-prefix={root}={CHECKOUT_AS}",
             f"--remap-path-prefix={cargo_home()}={CARGO_HOME_AS}"]
    # rustc applies the last prefix that matches: a target directory outside
    # the checkout (CARGO_TARGET_DIR) gets its own.
    if not target.startswith(root + os.sep):
        flags.append(f"--remap-path-prefix={target}={CHECKOUT_AS}/target")
    return flags


def environ(root, arch, base=None, target=None):
    """The environment for `cargo lambda build` (or `sam build`) of a
    release for `arch`: `base` (default: this process's) with the flags
    above, no RUSTFLAGS of its own, and the target directory `sam build`
    sets itself."""
    env = dict(os.environ if base is None else base)
    target = target or target_dir(root)
    env.pop("RUSTFLAGS", None)
    env["CARGO_ENCODED_RUSTFLAGS"] = "\x1f".join(rustflags(root, arch, target))
    env["CARGO_TARGET_DIR"] = target
    return env
