import { describe, expect, it } from "vitest";
import { parseWorkflow } from "./index.ts";
import { parseError, parseOk, workflowWithJobs } from "./test-support.ts";

const single = (body: string) => workflowWithJobs(`name: a\n${body}`);
const firstJob = (body: string) => {
  const job = parseOk(single(body)).jobs[0];
  if (!job) throw new Error("expected one job");
  return job;
};

describe("parseWorkflow: job fields", () => {
  it("normalises the three step forms and keeps step names", () => {
    const job = firstJob(
      "steps:\n  - make\n  - run: make test\n  - name: Lint all\n    run: |\n      npm run lint\n  - true",
    );
    expect(job.steps).toEqual(["make", "make test", "npm run lint\n", "true"]);
    expect(job.stepNames).toEqual([null, null, "Lint all", null]);
  });

  it("rejects empty, oversized and malformed steps", () => {
    expect(parseError(single('steps: [""]')).message).toContain("jobs[0].steps[0] must not be an empty command");
    expect(parseError(single("steps: [~]")).message).toContain(
      "must be a shell command string or {run: command} (got null)",
    );
    expect(parseError(single("steps: [{name: x}]")).message).toContain(
      'jobs[0].steps[0] is missing required key "run"',
    );
    expect(parseError(single("steps: [{run: x, with: y}]")).path).toBe("jobs[0].steps[0].with");
    expect(parseError(single(`steps: ["${"x".repeat(16 * 1024 + 1)}"]`)).message).toContain("longer than 16384");
    const tooMany = `steps: [${Array.from({ length: 257 }, () => "x").join(", ")}]`;
    expect(parseError(single(tooMany)).message).toContain("has 257 entries; at most 256");
  });

  it("keeps env values exactly as written", () => {
    const source = `version: 1\nenv: {RELEASE: 1.10, DEBUG: true, HEX: 0x1F, NAME: "x"}\njobs:\n  - name: a\n    env: {EMPTY: ""}\n    steps: [x]\n`;
    const definition = parseOk(source);
    expect(definition.env).toEqual({ RELEASE: "1.10", DEBUG: "true", HEX: "0x1F", NAME: "x" });
    expect(definition.jobs[0]?.env).toEqual({ EMPTY: "" });
  });

  it("rejects bad env names, null values and too many variables", () => {
    expect(parseError(single('env: {"A-B": x}\nsteps: [x]')).message).toContain("must match [A-Za-z_][A-Za-z0-9_]*");
    expect(parseError(single("env: {A: ~}\nsteps: [x]")).message).toContain(
      "jobs[0].env.A must be a string, number or boolean",
    );
    const many = Array.from({ length: 129 }, (_, i) => `V${i}: x`).join(", ");
    expect(parseError(single(`env: {${many}}\nsteps: [x]`)).message).toContain("129 variables; at most 128");
  });

  it("refuses variable names that steer a loader or interpreter (issue 28), in env and in secrets", () => {
    for (const name of [
      "LD_PRELOAD",
      "ld_audit",
      "PERL5OPT",
      "PERL5DB",
      "PERLLIB",
      "GCONV_PATH",
      "LOCPATH",
      "MALLOC_CHECK_",
      "GLIBC_TUNABLES",
      "BASH_ENV",
      "ENV",
      "PYTHONSTARTUP",
    ]) {
      const err = parseError(single(`env: {${name}: x}\nsteps: [x]`));
      expect(err.code, name).toBe("WORKFLOW.ENV_NAME_RESERVED");
      expect(err.message).toContain(`"${name}" steers a loader or an interpreter`);
    }
    expect(parseError(single("secrets: [LD_PRELOAD]\nsteps: [x]")).code).toBe("WORKFLOW.ENV_NAME_RESERVED");
    // Everyday build variables stay allowed.
    const ok = parseOk(
      single("env: {NODE_OPTIONS: --max-old-space-size=4096, PYTHONPATH: src, LD: ld.gold}\nsteps: [x]"),
    );
    expect(ok.jobs[0]?.env).toMatchObject({
      NODE_OPTIONS: "--max-old-space-size=4096",
      PYTHONPATH: "src",
      LD: "ld.gold",
    });
  });

  it("keeps a variable called __proto__ as plain data", () => {
    const env = firstJob("env: {__proto__: polluted}\nsteps: [x]").env;
    expect(Object.getOwnPropertyDescriptor(env, "__proto__")?.value).toBe("polluted");
    expect(Object.getPrototypeOf(env)).toBe(Object.prototype);
  });

  it("reads image, timeout and tier", () => {
    const job = firstJob("image: alpine:3.20\ntimeout_minutes: 1440\ntier: background\nsteps: [x]");
    expect(job).toMatchObject({ image: { ref: "alpine:3.20" }, timeoutMinutes: 1440, tier: "background" });
    expect(parseError(single("image: {ref: a, tag: b}\nsteps: [x]")).path).toBe("jobs[0].image.tag");
    expect(parseError(single("image: 'has space'\nsteps: [x]")).message).toContain("without whitespace");
    for (const timeout of ["0", "1441", "1.5", '"30"', "1e400", "99999999999999999999"]) {
      expect(parseError(single(`timeout_minutes: ${timeout}\nsteps: [x]`)).message).toContain(
        "jobs[0].timeout_minutes must be a whole number of minutes from 1 to 1440",
      );
    }
    expect(parseError(single("tier: urgent\nsteps: [x]")).message).toContain(
      "must be one of: interactive, scheduled, background",
    );
  });

  it("validates names", () => {
    for (const name of ["'has space'", "'..'", "'a/b'", `${"n".repeat(101)}`]) {
      expect(parseError(single(`steps: [x]`).replace("name: a", `name: ${name}`)).path).toBe("jobs[0].name");
    }
    expect(parseOk(single("steps: [x]").replace("name: a", "name: 2024")).jobs[0]?.name).toBe("2024");
  });

  it("requires every cache field and a known kind", () => {
    expect(parseError(single("cache: {kind: dependencies, version: v1, paths: [x]}\nsteps: [x]")).message).toContain(
      'jobs[0].cache is missing required key "inputs"',
    );
    expect(parseError(single("cache: {kind: npm, version: v1, inputs: [], paths: [x]}\nsteps: [x]")).message).toContain(
      "must be one of: dependencies, directory",
    );
    expect(
      parseError(single("cache: {kind: directory, version: v1, inputs: [/abs], paths: [x]}\nsteps: [x]")).path,
    ).toBe("jobs[0].cache.inputs[0]");
    expect(
      parseError(single("cache: {kind: directory, version: v1, inputs: [], paths: []}\nsteps: [x]")).message,
    ).toContain("non-empty list of paths");
  });

  it("checks artifact names and restores", () => {
    const publish = (entries: string) => single(`steps: [x]\nartifacts: {publish: [${entries}]}`);
    expect(parseError(publish("{name: a, path: x}, {name: a, path: y}")).message).toContain(
      'publishes artifact "a" twice',
    );
    expect(parseError(publish("{name: 'a b', path: x}")).path).toBe("jobs[0].artifacts.publish[0].name");
    const source = workflowWithJobs(
      "name: build\nsteps: [x]\nartifacts: {publish: [{name: app, path: app.jar}]}",
      "name: test\nsteps: [x]\nartifacts: {restore: [{from_job: build, name: docs, path: docs}]}",
    );
    expect(parseError(source).message).toContain('restores artifact "docs" from "build", which does not publish it');
    const self = single(
      "steps: [x]\nartifacts: {publish: [{name: o, path: o}], restore: [{from_job: a, name: o, path: i}]}",
    );
    expect(parseError(self).message).toContain("cannot restore artifacts from itself");
  });
});

describe("parseWorkflow: YAML hygiene", () => {
  it.each([
    ["explicit core tags", "version: 1\njobs: !!binary aGVsbG8=", "explicit tags are not allowed (found !!binary)"],
    ["custom tags", "version: 1\njobs: !foo bar", "custom tags are not allowed"],
    ["multiple documents", "version: 1\n---\nversion: 1", "exactly one YAML document"],
    ["non-string keys", "version: 1\n1: x", "mapping keys must be strings"],
    ["null keys", "version: 1\n~: x", "mapping keys must be strings"],
    ["complex keys", "version: 1\n? [a]\n: x", "mapping keys must be strings"],
    ["YAML 1.1 documents", "%YAML 1.1\n---\nversion: 1", "only YAML 1.2 is supported"],
    ["merge keys", "version: 1\n<<: {jobs: []}", 'unknown key "<<"'],
    ["a non-mapping root", "[1, 2]", "workflow must be a mapping with version and jobs (got a list)"],
  ])("rejects %s", (_, source, message) => {
    expect(parseError(source).message).toContain(message);
  });

  it("maps syntax errors to a line and column", () => {
    const error = parseError("version: 1\njobs:\n  - name: [unclosed\n");
    expect(error.line).toBeGreaterThanOrEqual(3);
    expect(error.message).toMatch(/^line \d+, column \d+: invalid YAML: /);
  });

  it("reports empty input without a position", () => {
    expect(parseError("# nothing here\n")).toMatchObject({ line: null, message: expect.stringContaining("empty") });
  });

  it("rejects non-string input from untyped callers", () => {
    const result = parseWorkflow(42 as unknown as string);
    expect(result.ok).toBe(false);
  });

  it("finds duplicate keys in huge maps in linear time", () => {
    // A ratio, not a wall-clock bound: CI machines are shared and noisy. Four times the keys must
    // cost well under the 16x a pairwise (quadratic) check would.
    const timeFor = (n: number) => {
      const source = `${Array.from({ length: n }, (_, i) => `k${i}: 1`).join("\n")}\nk0: 2\n`;
      const samples = [0].map(() => {
        const started = performance.now();
        const error = parseError(source);
        expect(error.message).toContain('duplicate key "k0"');
        return performance.now() - started;
      });
      return samples[0] ?? 0;
    };
    const small = timeFor(2_000);
    const large = timeFor(8_000);
    expect(large / small).toBeLessThan(9);
  });
});

describe("pull_request options (issue 19)", () => {
  it("reads cancel_superseded and leaves definitions without the key unchanged", () => {
    const on = parseWorkflow(
      "version: 1\npull_request: {cancel_superseded: true}\njobs:\n  - name: a\n    steps: [x]\n",
    );
    expect(on.ok && on.definition.pullRequest).toEqual({ cancelSuperseded: true });
    const off = parseWorkflow("version: 1\njobs:\n  - name: a\n    steps: [x]\n");
    expect(off.ok && "pullRequest" in off.definition).toBe(false);
    const bad = parseWorkflow(
      "version: 1\npull_request: {cancel_superseded: yes}\njobs:\n  - name: a\n    steps: [x]\n",
    );
    expect(!bad.ok && bad.error.message).toContain("pull_request.cancel_superseded must be true or false");
    const typo = parseWorkflow(
      "version: 1\npull_request: {cancel_superseeded: true}\njobs:\n  - name: a\n    steps: [x]\n",
    );
    expect(!typo.ok && typo.error.message).toContain('unknown key "cancel_superseeded"');
  });
});
