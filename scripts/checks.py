"""One tally for the scripts that print a line per check and a closing
"<name>: N passed, M failed" line (scripts/test.sh adds those up):
check_template.py, deploy_build.py, readme_cargo_lambda.py."""

import sys


class Checks:
    """Checks of one script: `check` prints and records each, `finish` prints
    the closing line and exits 0 only if every check passed."""

    def __init__(self, name):
        self.name = name
        self.results = []

    def check(self, ok, what):
        self.results.append((bool(ok), what))
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        return bool(ok)

    def all_passed(self):
        return all(ok for ok, _ in self.results)

    def finish(self):
        passed = sum(1 for ok, _ in self.results if ok)
        print(f"{self.name}: {passed} passed, {len(self.results) - passed} failed", flush=True)
        sys.exit(0 if passed == len(self.results) else 1)
