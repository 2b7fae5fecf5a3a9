// Real open-source projects (issue 30 item 5; e2e/fixtures/real-projects/README.md): their upstream
// release tarballs (downloaded and verified at test time, never committed: real-project-sources.ts)
// as a test repository's tree, their own CI commands as a Kiln workflow, what their suites print
// when they pass, and a deliberately broken copy of each whose suite must fail. Shared by
// e2e/real-builds.test.ts and bench/real-builds; also publishes the toolchain images they run in.
import os from "node:os";
import path from "node:path";
import {
  buildToolchainImage,
  BUILTIN_SPECS,
  publishToolchainImage,
  RegistryClient,
  registryEndpoint,
  type ToolchainImage,
} from "@kiln/oci";
import { REAL_PROJECT_SOURCES, realProjectFiles } from "./real-project-sources.ts";

export interface RealProject {
  /** Its key in REAL_PROJECT_SOURCES, the job's name and the folder the job's step enters. */
  name: string;
  /** A short toolchain image name (ADR 0040), resolved by the platform registry. */
  image: "kiln/node:24" | "kiln/python:3" | "kiln/build-base:12";
  /** The project's own CI command (see e2e/fixtures/real-projects/README.md), run from its folder. */
  command: string;
  /** Environment the project's CI has (GitHub Actions sets CI=true; picocolors' colour check reads it). */
  env: Record<string, string>;
  /** Checks the suite's own summary in the step's stdout; returns what is wrong, or null. */
  passed: (stdout: string) => string | null;
  /** A one-line edit to the library (never its tests) that its suite catches. */
  breakage: { file: string; from: string; to: string };
}

const PICOCOLORS_TESTS = [
  "color matching",
  "format/color nesting",
  "proper wrapping",
  "complex case of wrapping",
  "close sequence replacement",
  "non-string input",
];

export const REAL_PROJECTS: readonly RealProject[] = [
  {
    name: "picocolors",
    image: "kiln/node:24",
    command: "npm test",
    env: { CI: "true" },
    passed: (out) => {
      const missing = PICOCOLORS_TESTS.filter((t) => !out.includes(`✓ ${t}`));
      if (missing.length) return `no "✓" line for ${missing.join(", ")}`;
      return out.includes("✗") ? "a test printed ✗" : null;
    },
    breakage: {
      file: "picocolors.js",
      from: 'red: enabled ? formatter("\\x1b[31m"',
      to: 'red: enabled ? formatter("\\x1b[35m"',
    },
  },
  {
    name: "toolz",
    image: "kiln/python:3",
    // tox.ini's command (`py.test`) on the package's tests, through the image's python3 (Debian's
    // python3-pytest). Not bench/: timing scripts whose word count wgets a corpus from the internet.
    // toolz/sandbox's fold test runs a multiprocessing Pool: it needs a /dev/shm in the sandbox.
    command: "python3 -m pytest -rfsxX toolz",
    env: {},
    // Every test runs (no optional modules): a failure shows as "N failed, M passed" instead.
    passed: (out) => (/ 185 passed(,| in )/.test(out) ? null : 'no "185 passed" summary'),
    breakage: {
      file: "toolz/itertoolz.py",
      from: "    return next(iter(seq))\n",
      to: "    return next(iter(seq[1:]))\n",
    },
  },
  {
    name: "jsmn",
    image: "kiln/build-base:12",
    command: "make test",
    env: {},
    // Four builds of test/tests.c (default, strict, parent links, both), 16 tests each.
    passed: (out) => {
      const passes = out.match(/^PASSED: 16$/gm)?.length ?? 0;
      const clean = out.match(/^FAILED: 0$/gm)?.length ?? 0;
      return passes === 4 && clean === 4 ? null : `${passes}/4 "PASSED: 16" and ${clean}/4 "FAILED: 0" lines`;
    },
    breakage: { file: "jsmn.h", from: "        t->size++;\n", to: "        t->size += 2;\n" },
  },
];

/**
 * Every project's upstream files, keyed by their path in the test repository (`<project>/<file>`),
 * from Debian's archive through the verified cache; throws when a download or checksum fails.
 */
export async function realProjectsTree(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of REAL_PROJECTS) {
    const source = REAL_PROJECT_SOURCES[p.name];
    if (!source) throw new Error(`real project ${p.name}: no pinned source`);
    for (const [rel, text] of Object.entries(await realProjectFiles(source))) out[`${p.name}/${rel}`] = text;
  }
  return out;
}

/** The same tree with each project's library broken by its `breakage` (its tests untouched). */
export function brokenTree(tree: Record<string, string>): Record<string, string> {
  const out = { ...tree };
  for (const p of REAL_PROJECTS) {
    const key = `${p.name}/${p.breakage.file}`;
    const text = out[key];
    if (text === undefined || text.split(p.breakage.from).length !== 2)
      throw new Error(`${key}: the breakage must match exactly once`);
    out[key] = text.replace(p.breakage.from, p.breakage.to);
  }
  return out;
}

/**
 * One job per project, each in its toolchain image and kept to agents with `label` (the e2e suite
 * gives the process agent and the microVM agent one label each).
 */
export function realProjectsWorkflow(label: string, projects: readonly RealProject[] = REAL_PROJECTS): string {
  const jobs = projects.map((p) => {
    const env = Object.entries(p.env).map(([k, v]) => `      ${k}: "${v}"\n`);
    return [
      `  - name: ${p.name}\n`,
      `    image: ${p.image}\n`,
      `    runs_on: { labels: [${label}] }\n`,
      // Independent jobs (a plain list would run as a sequence and skip the rest after a failure).
      "    needs: []\n",
      "    timeout_minutes: 20\n",
      env.length ? `    env:\n${env.join("")}` : "",
      `    steps: ["cd ${p.name} && ${p.command}"]\n`,
    ].join("");
  });
  return `version: 1\njobs:\n${jobs.join("")}`;
}

/** The image cache `npm run up` uses (scripts/lib/images/toolchain-images.ts: imageCacheDir). */
function toolchainImageCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KILN_IMAGE_CACHE) return path.resolve(env.KILN_IMAGE_CACHE);
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "kiln", "images");
}

/**
 * Builds (or, from the cache, reuses: minutes only once per Debian point release) the built-in
 * toolchain images the real projects run in and pushes them by digest and tag to `registry`.
 */
export async function publishRealProjectImages(registry: string, log: (m: string) => void): Promise<ToolchainImage[]> {
  const cacheDir = toolchainImageCacheDir();
  const client = new RegistryClient(registryEndpoint({ [registry]: {} }, registry));
  const out: ToolchainImage[] = [];
  for (const spec of BUILTIN_SPECS.filter((s) => REAL_PROJECTS.some((p) => p.image === `${s.name}:${s.tag}`))) {
    const image = await buildToolchainImage(spec, { cacheDir, onProgress: log });
    await publishToolchainImage(client, image, { cacheDir });
    out.push(image);
  }
  return out;
}
