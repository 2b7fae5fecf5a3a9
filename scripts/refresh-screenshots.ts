// `npm run screenshots [-- e2e/dashboard.test.ts ...]`: refreshes the documented screenshots on purpose.
// The e2e tests write every screenshot into the ignored .artifacts/screenshots/ (tests never rewrite
// tracked files); this runs the e2e files that take screenshots (or the ones named), then copies what
// they wrote in this run over docs/screenshots/, where `git diff` shows what changed. A new name
// shows up as an untracked file to add or drop.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const written = path.join(root, ".artifacts/screenshots");
const documented = path.join(root, "docs/screenshots");

/** e2e test files that call screenshot(): the ones that (re)draw a documented picture. */
function screenshotTests(dir = path.join(root, "e2e")): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory() && e.name !== "node_modules") out.push(...screenshotTests(full));
    else if (e.name.endsWith(".test.ts") && /\bscreenshot\(/.test(readFileSync(full, "utf8"))) out.push(full);
  }
  return out.sort();
}

const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : screenshotTests();
const started = Date.now();
console.log(`running ${files.length} e2e file(s) that take screenshots`);
const run = spawnSync("vitest", ["run", ...files.map((f) => path.relative(root, path.resolve(f)))], {
  cwd: root,
  stdio: "inherit",
});
if (run.status !== 0) {
  console.error("the tests failed: docs/screenshots left as it was");
  process.exit(run.status ?? 1);
}
mkdirSync(documented, { recursive: true });
const fresh = readdirSync(written).filter(
  (n) => n.endsWith(".png") && statSync(path.join(written, n)).mtimeMs >= started,
);
for (const name of fresh) copyFileSync(path.join(written, name), path.join(documented, name));
console.log(`copied ${fresh.length} screenshot(s) into docs/screenshots: ${fresh.join(", ")}`);
