// Type-aware lint for every TypeScript file in the repo (conventions 11, 12, 18). The rules here are
// the ones a reviewer would otherwise have to catch by eye: unawaited promises, non-exhaustive
// switches over unions, value imports of types, configuration read outside an env.ts, console
// output in production code.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// Files allowed to read process.env: each app's env.ts (parsed once at boot), the test and
// development infrastructure, and the scripts/bench/e2e entry points that configure child processes.
const envReaders = [
  "apps/*/src/env.ts",
  "apps/web/src/server/env.ts",
  "apps/web/src/server/auth/env.ts",
  "packages/testkit/**",
  "scripts/**",
  "bench/**",
  "e2e/**",
  "test/**",
  "**/*.test.ts",
  "*.ts",
];

// Where console output is the program's interface (CLI, benchmarks, test harnesses) rather than
// production logging.
const consoleAllowed = [
  "scripts/**",
  "bench/**",
  "e2e/**",
  "test/**",
  "**/*.test.ts",
  "**/*.test.tsx",
  "packages/testkit/**",
];

const testCode = ["e2e/**", "bench/**", "test/**", "**/*.test.ts", "**/*.test.tsx", "packages/*/test/**"];

export default tseslint.config(
  {
    ignores: [
      "**/node_modules/**",
      "**/.next/**",
      "**/generated/**",
      ".tools/**",
      ".kiln-data/**",
      "**/next-env.d.ts",
      "**/*.js",
      "**/*.mjs",
      "**/*.cjs",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { attributes: false } }],
      "@typescript-eslint/switch-exhaustiveness-check": [
        "error",
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true },
      ],
      "no-restricted-properties": [
        "error",
        { object: "process", property: "env", message: "Read configuration in the app's env.ts (conventions 11)." },
      ],
      "no-console": "error",
    },
  },
  { files: envReaders, rules: { "no-restricted-properties": "off" } },
  // The domain decides; it never looks at the clock, a random source or the environment (conventions 1):
  // time and ids are passed in, so every decision replays the same way in a test. dependency-cruiser
  // checks its imports.
  {
    files: ["packages/domain/src/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: {
      "no-restricted-properties": [
        "error",
        { object: "process", message: "The domain is pure: configuration is passed in." },
        { object: "Date", property: "now", message: "The domain is pure: pass the time in." },
        { object: "Math", property: "random", message: "The domain is pure: pass ids and randomness in." },
        { object: "crypto", message: "The domain is pure: pass ids and randomness in." },
      ],
      "no-restricted-syntax": [
        "error",
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: "The domain is pure: pass the time in.",
        },
      ],
      "no-restricted-globals": ["error", "fetch", "setTimeout", "setInterval", "performance"],
    },
  },
  { files: consoleAllowed, rules: { "no-console": "off" } },
  // Black-box tests and harnesses read the wire (JSON bodies of the API under test) as untyped data on
  // purpose: typing them with the server's own view types would make a test trust the types it checks.
  { files: testCode, rules: { "@typescript-eslint/no-explicit-any": "off" } },
);
