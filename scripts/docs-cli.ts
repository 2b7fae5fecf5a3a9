// `npm run docs:cli`: rewrites docs/cli.md from the CLI's usage strings (scripts/kiln/cli-reference.ts).
// Run it after changing a command; the CLI reference test fails until the two agree.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { renderCliReference } from "./kiln/cli-reference.ts";
import { commands } from "./kiln/registry.ts";

const target = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../docs/cli.md");
writeFileSync(target, renderCliReference(commands));
console.log(`wrote ${path.relative(process.cwd(), target)} (${commands.length} commands)`);
