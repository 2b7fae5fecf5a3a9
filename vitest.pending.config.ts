import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

// Fault scenarios written for issue 7 that do not hold yet (docs/reliability.md, "Bugs found").
// They are not part of `npm test`; run them on purpose:
//   npx vitest run --config vitest.pending.config.ts
// and move a file back to e2e/faults/<name>.test.ts once it passes reliably.
export default defineConfig({ test: { ...base.test, include: ["e2e/faults/pending/*.scenario.ts"] } });
