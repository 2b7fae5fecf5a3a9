import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  // apps/web's "@/..." import alias (its tsconfig paths), so its tests can load route modules.
  resolve: {
    alias: [
      { find: /^@\//, replacement: `${path.join(root, "apps/web/src")}/` },
      // next-auth imports next/server without the extension Node's ESM resolver needs.
      { find: /^next\/(server|headers)$/, replacement: "next/$1.js" },
    ],
  },
  test: {
    // Transformed by vite (not loaded by Node) so that the alias above reaches next-auth's imports.
    server: { deps: { inline: ["next-auth"] } },
    // One embedded PostgreSQL per test run; each file clones a migrated template (conventions 13).
    globalSetup: ["./test/global-setup.ts"],
    include: ["packages/**/*.test.ts", "apps/**/*.test.ts", "e2e/**/*.test.ts", "scripts/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/.next/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: true,
    maxWorkers: 2,
  },
});
