import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // One embedded PostgreSQL per test run; each file clones a migrated template (conventions 13).
    globalSetup: ["./test/global-setup.ts"],
    include: ["packages/**/*.test.ts", "apps/**/*.test.ts", "e2e/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/.next/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: true,
    maxWorkers: 2,
  },
});
