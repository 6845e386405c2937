#!/usr/bin/env python3
"""Moved, not lost: every paragraph, list item, heading, table row and code
line of some old Markdown pages is still somewhere in the project's
Markdown files.

Run it when pages are split or shortened, on the pages as they were:

    scripts/check-moved-text.sh 711abc2:README.md 711abc2:bench/README.md
    scripts/check-moved-text.sh --old-file /tmp/old-page.md

Each old page is cut into units: a paragraph (its lines joined), a list item
(its marker left out), a heading (its `#`s left out), a table row, a line of
a fenced code block. A unit counts as

* found: word for word (spaces and line breaks aside) in one Markdown file
  of the tree;
* reworded: not word for word, but at least REWORDED_SHARE of its words,
  in order, at one place of one file (a cross-reference turned into a link,
  a "below" that is now another page); each is listed with that file, to
  be read;
* missing: neither. Any missing unit fails the check (exit status 1).

The Markdown files are those tests/docs.rs reads: every `*.md` outside
hidden folders, `target/` and `dist/`. Standard library only.

`--self-test` runs the check on pages made for it (a unit kept, one moved
to another file, one reworded, and a paragraph, a table row and a code line
deleted) and exits 0 only if it tells them apart; tests/docs.rs runs it.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REWORDED_SHARE = 0.75
SHORTEST = 12  # characters: units shorter than this ("```", "|---|", "Tried:") are not checked
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
SEPARATOR_ROW = re.compile(r"^\|[\s:|-]*\|$")


RELATIVE_UP = re.compile(r"\]\((?:\.\./)+")


def normalise(text):
    """Spaces and line breaks as one space; a relative link's leading `../`s
    left out, so a paragraph moved a folder down still matches."""
    return RELATIVE_UP.sub("](", " ".join(text.split()))


def units(text, shortest=SHORTEST):
    """The units of a Markdown text, as (kind, normalised text), in order."""
    out = []
    block = []  # lines of the paragraph or list item being gathered
    kind = None

    def flush():
        nonlocal block, kind
        if block:
            out.append((kind, normalise(" ".join(block))))
        block, kind = [], None

    fenced = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced:
            if stripped:
                out.append(("code", normalise(stripped)))
            continue
        if not stripped:
            flush()
        elif stripped.startswith("#"):
            flush()
            out.append(("heading", normalise(stripped.lstrip("#"))))
        elif stripped.startswith("|"):
            flush()
            if not SEPARATOR_ROW.match(stripped):
                out.append(("row", normalise(stripped)))
        elif LIST_ITEM.match(line):
            flush()
            kind = "item"
            block = [LIST_ITEM.sub("", line, count=1)]
        else:
            if kind is None:
                kind = "paragraph"
            block.append(stripped)
    flush()
    return [(k, u) for k, u in out if len(u) >= shortest]


def markdown_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and d not in ("target", "dist"))
        for name in sorted(filenames):
            if name.endswith(".md"):
                yield os.path.join(dirpath, name)


class Tree:
    """The Markdown files of a tree, each as its units on one line (so list
    markers and `#`s are left out as in the old pages' units) and as a list
    of words."""

    def __init__(self, root):
        self.root = root
        self.files = []
        for path in markdown_files(root):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            flat = " ".join(u for _, u in units(text, shortest=0))
            self.files.append((os.path.relpath(path, root), flat, flat.split(" ")))

    def exact(self, unit):
        return next((name for name, flat, _ in self.files if unit in flat), None)

    def closest(self, unit):
        """(share of the unit's words found in order at one place, file)."""
        words = unit.split(" ")
        grams = {tuple(words[i:i + 3]) for i in range(max(1, len(words) - 2))}
        best = (0.0, None)
        for name, _, fwords in self.files:
            hits = [i for i in range(len(fwords) - 2) if tuple(fwords[i:i + 3]) in grams]
            if not hits:
                continue
            # The window around the densest run of hits, a little wider than the unit.
            span = len(words) + 10
            start = max(hits, key=lambda h: sum(1 for x in hits if h <= x < h + span))
            window = fwords[max(0, start - 10):start + span + 10]
            m = difflib.SequenceMatcher(None, words, window, autojunk=False)
            share = sum(b.size for b in m.get_matching_blocks()) / len(words)
            if share > best[0]:
                best = (share, name)
        return best


def old_text(spec):
    """REV:PATH from git, or a file's path."""
    if os.path.exists(spec):
        with open(spec, encoding="utf-8") as f:
            return f.read()
    return subprocess.run(["git", "-C", ROOT, "show", spec], check=True,
                          capture_output=True, text=True).stdout


def check(pages, root, quiet=False):
    """pages: [(name, text)]. Returns (found, reworded, missing) lists of
    (page, kind, unit, file)."""
    tree = Tree(root)
    found, reworded, missing = [], [], []
    for page, text in pages:
        for kind, unit in units(text):
            where = tree.exact(unit)
            if where:
                found.append((page, kind, unit, where))
                continue
            share, where = tree.closest(unit)
            (reworded if share >= REWORDED_SHARE else missing).append(
                (page, kind, unit, f"{where} ({share:.0%} of its words)" if where else "nowhere"))
    if not quiet:
        for page, _ in pages:
            n = [sum(1 for p, *_ in group if p == page) for group in (found, reworded, missing)]
            print(f"{page}: {sum(n)} units: {n[0]} found word for word, {n[1]} reworded, {n[2]} missing")
        for title, group in (("reworded", reworded), ("MISSING", missing)):
            for page, kind, unit, where in group:
                print(f"{title}: {page}: {kind}: {unit[:110]}{'…' if len(unit) > 110 else ''}\n"
                      f"    closest: {where}")
        print(f"moved-text: {len(found) + len(reworded)} of {len(found) + len(reworded) + len(missing)} "
              f"units present ({len(reworded)} reworded), {len(missing)} missing")
    return found, reworded, missing


OLD_PAGE = """# A page about the benchmark

Intro paragraph that stays exactly where it was,
over two lines.

## A study

- **A list item** that moves to another page word for word.
- A paragraph about a measurement of page faults under the cap that is reworded a little ("Memory kept below 36 MiB" below) when it moves to a page of its own.

| workload | figure |
|---|---:|
| Kinesis 10,000 × 40 B | 5.0 µs |
| a row that nobody kept | 1.0 µs |

A paragraph that is deleted and found nowhere else at all, not even in part.

See [the results](results/results.md) for every figure of the run.

```sh
bench/run.sh --smoke
a code line that is gone for good
```
"""

NEW_PAGES = {
    "README.md": """# A page about the benchmark

Intro paragraph that stays exactly where it was, over two lines.

| workload | figure |
|---|---:|
| Kinesis 10,000 × 40 B | 5.0 µs |

```sh
bench/run.sh --smoke
```
""",
    "notes/study.md": """# A study

* **A list item** that moves to another page
  word for word.

A paragraph about a measurement of page faults under the cap that is
reworded a little ([the allocator's page](allocator.md)) when it moves to
a page of its own.

See [the results](../results/results.md) for every figure
of the run.
""",
}


def self_test():
    failures = []
    with tempfile.TemporaryDirectory() as root:
        for name, text in NEW_PAGES.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        found, reworded, missing = check([("old.md", OLD_PAGE)], root, quiet=True)
        got = {u: state for state, group in (("found", found), ("reworded", reworded),
                                             ("missing", missing)) for _, _, u, _ in group}
        expect = {
            "A page about the benchmark": "found",
            "Intro paragraph that stays exactly where it was, over two lines.": "found",
            "**A list item** that moves to another page word for word.": "found",
            "| Kinesis 10,000 × 40 B | 5.0 µs |": "found",
            "bench/run.sh --smoke": "found",
            "A paragraph about a measurement of page faults under the cap that is reworded a "
            "little (\"Memory kept below 36 MiB\" below) when it moves to a page of its own.": "reworded",
            "| a row that nobody kept | 1.0 µs |": "missing",
            "A paragraph that is deleted and found nowhere else at all, not even in part.": "missing",
            "a code line that is gone for good": "missing",
            "See [the results](results/results.md) for every figure of the run.": "found",
        }
        for unit, state in expect.items():
            if got.get(unit) != state:
                failures.append(f"{unit!r}: {got.get(unit)}, expected {state}")
        where = {u: w for _, _, u, w in found}
        if where.get("**A list item** that moves to another page word for word.") != os.path.join("notes", "study.md"):
            failures.append(f"the moved item's file: {where}")
        # The separator row and the fence lines are not units.
        if any(u.startswith("|---") or u.startswith("```") for u in got):
            failures.append(f"not units: {sorted(got)}")
    for f in failures:
        print("FAIL " + f)
    print(f"moved-text self-test: {len(expect) + 2 - len(failures)} passed, {len(failures)} failed")
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", nargs="*", help="REV:PATH of an old page (git show's syntax)")
    ap.add_argument("--old-file", action="append", default=[], help="an old page as a file")
    ap.add_argument("--root", default=ROOT, help="the tree to look in (default: this project)")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(0 if self_test() else 1)
    specs = args.old + args.old_file
    if not specs:
        ap.error("name at least one old page (REV:PATH or --old-file FILE)")
    _, _, missing = check([(s, old_text(s)) for s in specs], args.root)
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
