import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseWorkflow, WORKFLOW_LIMITS } from "./index.ts";
import { expectWellFormed, parseError, parseOk, SEED_WORKFLOW, workflowWithJobs } from "./test-support.ts";

const job = (name: string, extra = "") => `name: ${name}\nsteps: [./${name}.sh]\n${extra}`;

describe("parseWorkflow: structure", () => {
  it("parses the seed example", () => {
    expect(parseOk(SEED_WORKFLOW)).toEqual({
      version: 1,
      env: {},
      jobs: [
        {
          index: 0,
          name: "compile",
          needs: [],
          image: { ref: "registry.example.com/ci/jdk17-maven:approved" },
          env: {},
          steps: ["./ci/build.sh"],
          stepNames: [null],
          timeoutMinutes: 60,
          tier: null,
          cache: {
            kind: "dependencies",
            version: "deps-v1",
            inputs: ["ci/dependencies.lock"],
            paths: ["/work/cache/maven"],
          },
          artifacts: { publish: [{ name: "app", path: "target/app.jar" }], restore: [] },
          secrets: [],
          secretsRequired: false,
        },
        {
          index: 1,
          name: "integration-test",
          needs: [0],
          image: { ref: "registry.example.com/ci/jdk21-gradle:approved" },
          env: {},
          steps: ["./ci/integration-test.sh inputs/app.jar"],
          stepNames: [null],
          timeoutMinutes: 60,
          tier: null,
          cache: null,
          artifacts: {
            publish: [],
            restore: [{ fromJob: "compile", name: "app", path: "inputs/app.jar" }],
          },
          secrets: [],
          secretsRequired: false,
        },
      ],
    });
  });

  it("chains jobs without needs onto the previous job", () => {
    const { jobs } = parseOk(workflowWithJobs(job("a"), job("b"), job("c")));
    expect(jobs.map((j) => j.needs)).toEqual([[], [0], [1]]);
  });

  it("runs jobs with needs: [] in parallel", () => {
    const { jobs } = parseOk(workflowWithJobs(job("a"), job("b", "needs: []"), job("c", "needs: []")));
    expect(jobs.map((j) => j.needs)).toEqual([[], [], []]);
  });

  it("resolves named needs, including jobs declared later", () => {
    const source = workflowWithJobs(job("deploy", "needs: [test, build]"), job("build", "needs: []"), job("test"));
    expect(parseOk(source).jobs.map((j) => j.needs)).toEqual([[2, 1], [], [1]]);
  });

  it("rejects unknown and self-referencing needs", () => {
    expect(parseError(workflowWithJobs(job("a"), job("b", "needs: [nope]"))).message).toBe(
      'line 7, column 13: jobs[1].needs[0] names unknown job "nope"',
    );
    expect(parseError(workflowWithJobs(job("a", "needs: [a]"))).message).toContain("cannot need itself");
  });

  it("detects dependency cycles", () => {
    const error = parseError(workflowWithJobs(job("a", "needs: [c]"), job("b", "needs: [a]"), job("c", "needs: [b]")));
    expect(error.message).toContain("dependency cycle: a -> c -> b -> a");
    expect(error.path).toBe("jobs[1].needs");
  });

  it("explains cycles that go through an implicit dependency", () => {
    const error = parseError(workflowWithJobs(job("a", "needs: [b]"), job("b")));
    expect(error.message).toContain("a -> b -> a; a job without `needs` depends on the job before it");
  });
});

describe("parseWorkflow: rejected input", () => {
  it("reports unknown keys with their line and column", () => {
    const error = parseError(
      SEED_WORKFLOW.replace("    steps:\n      - ./ci/build.sh", "    stpes:\n      - ./ci/build.sh"),
    );
    expect(error).toMatchObject({ line: 11, column: 5, path: "jobs[0].stpes" });
    expect(error.message).toMatch(/^line 11, column 5: unknown key "stpes" in jobs\[0\]; expected one of: name,/);
  });

  it("names the offending path for type errors", () => {
    const error = parseError(workflowWithJobs(job("a"), "name: b\nsteps: []"));
    expect(error.message).toBe("line 6, column 12: jobs[1].steps must be a non-empty list of commands");
  });

  it.each([
    ["version: 2", "version must be 1 (got 2)"],
    ['version: "1"', "version must be 1 (got a string)"],
    ["env: {}", 'workflow is missing required key "version"'],
  ])("rejects a bad version: %s", (header, message) => {
    const error = parseError(`${header}\njobs:\n  - ${job("a").replace("\n", "\n    ")}`);
    expect(error.message).toContain(message);
  });

  it("rejects input over maxBytes before parsing", () => {
    const padding = "#".repeat(WORKFLOW_LIMITS.maxBytes);
    const error = parseError(`${SEED_WORKFLOW}${padding}`);
    expect(error).toMatchObject({ line: null, column: null, path: null });
    expect(error.message).toContain("too large");
    // Multi-byte characters count as bytes, not UTF-16 units.
    expect(parseError(`${SEED_WORKFLOW}#${"é".repeat(WORKFLOW_LIMITS.maxBytes / 2)}`).message).toContain("too large");
  });

  it("rejects anchors and aliases", () => {
    const withAnchor = SEED_WORKFLOW.replace(
      "image:\n      ref: registry.example.com/ci/jdk17",
      "image: &img\n      ref: registry.example.com/ci/jdk17",
    );
    expect(parseError(withAnchor).message).toMatch(/^line 4, column 12: anchors are not allowed \(found &img\)/);

    const laughs = [
      'a: &a ["lol","lol"]',
      ...Array.from(
        { length: 9 },
        (_, i) => `${"bcdefghij"[i]}: &${"bcdefghij"[i]} [*${"abcdefghi"[i]},*${"abcdefghi"[i]}]`,
      ),
    ];
    expect(parseError(laughs.join("\n")).message).toContain("anchors are not allowed");
    expect(parseError("version: 1\njobs: *x").message).toMatch(/alias|anchor/i);
  });

  it("rejects nesting deeper than maxDepth without overflowing the stack", () => {
    const deepFlow = `version: 1\nx: ${"[".repeat(10_000)}${"]".repeat(10_000)}`;
    expect(parseError(deepFlow).message).toContain("nesting is deeper than 32 levels");
    expect(parseError(`${"- ".repeat(50_000)}x`).message).toContain("nesting is deeper than 32 levels");
    expect(parseError("{a: ".repeat(30_000)).message).toContain("nesting is deeper than 32 levels");
    const indented = Array.from({ length: 40 }, (_, i) => `${" ".repeat(i)}k${i}:`).join("\n");
    expect(parseError(indented)).toMatchObject({ line: 33, message: expect.stringContaining("nesting") });
  });

  it("allows exactly maxDepth levels of nesting", () => {
    const nested = (levels: number) => `version: 1\nx: ${"[".repeat(levels)}${"]".repeat(levels)}`;
    expect(parseError(nested(31)).message).toContain('unknown key "x"');
    expect(parseError(nested(32)).message).toContain("nesting is deeper than 32 levels");
  });

  it("rejects duplicate keys and duplicate job names", () => {
    expect(parseError("version: 1\nversion: 1\njobs: []").message).toBe(
      'line 2, column 1: duplicate key "version"; mapping keys must be unique',
    );
    const error = parseError(workflowWithJobs(job("a"), job("a")));
    expect(error).toMatchObject({ line: 5, column: 11, path: "jobs[1].name" });
    expect(error.message).toContain('duplicate job name "a"');
  });

  it("accepts maxJobs jobs and rejects one more", () => {
    const jobs = (count: number) => workflowWithJobs(...Array.from({ length: count }, (_, i) => job(`j${i}`)));
    expect(parseOk(jobs(WORKFLOW_LIMITS.maxJobs)).jobs).toHaveLength(256);
    expect(parseError(jobs(WORKFLOW_LIMITS.maxJobs + 1)).message).toBe(
      "line 3, column 3: jobs has 257 entries; at most 256 are allowed",
    );
  });

  it.each([
    ["../escape", "must not contain a .. segment"],
    ["a/../../etc/passwd", "must not contain a .. segment"],
    ["/etc/passwd", "must be relative to the workspace"],
    ["a//b", "must be normalised"],
    ["./a", "must be normalised"],
    ["dir/", "must be normalised"],
    ['"a\\0b"', "must not contain control characters"],
    ["a\\\\b", "must use / as the separator"],
  ])("rejects artifact path %s", (path, problem) => {
    const error = parseError(workflowWithJobs(job("a", `artifacts:\n  publish:\n    - name: x\n      path: ${path}`)));
    expect(error.path).toBe("jobs[0].artifacts.publish[0].path");
    expect(error.message).toContain(problem);
  });

  it("rejects cache paths that escape even though they may be absolute", () => {
    const cache = (path: string) =>
      workflowWithJobs(job("a", `cache: {kind: directory, version: v1, inputs: [], paths: [${path}]}`));
    expect(parseOk(cache("/work/cache")).jobs[0]?.cache?.paths).toEqual(["/work/cache"]);
    expect(parseError(cache("/work/../etc")).message).toContain("must not contain a .. segment");
    expect(parseError(cache("/")).message).toContain("filesystem root");
  });

  it("rejects restoring from a job that is not a dependency", () => {
    const publish = "artifacts:\n  publish: [{name: app, path: app.jar}]";
    const restore = "artifacts:\n  restore: [{from_job: build, name: app, path: in/app.jar}]";
    const error = parseError(workflowWithJobs(job("build", publish), job("test", `needs: []\n${restore}`)));
    expect(error.path).toBe("jobs[1].artifacts.restore[0].from_job");
    expect(error.message).toContain('job "test" restores from "build" but does not depend on it');
    const transitive = workflowWithJobs(job("build", publish), job("lint"), job("test", restore));
    expect(parseOk(transitive).jobs[2]?.artifacts.restore).toHaveLength(1);
  });
});

describe("parseWorkflow: never throws", () => {
  const check = (source: string) => {
    const result = parseWorkflow(source);
    if (!result.ok) expectWellFormed(result.error);
  };

  it("on arbitrary strings", () => {
    fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 400 }), check), { numRuns: 500 });
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(..."[]{}:-?&*!|>'\"#%@`, \n\t\\ab1"), maxLength: 200 }), check),
      { numRuns: 500 },
    );
  });

  it("on arbitrary JSON values rendered as YAML", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => check(JSON.stringify(value) ?? "null")),
      { numRuns: 300 },
    );
  });

  it("on workflow-shaped JSON", () => {
    const scalar = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.boolean(), fc.constant(null));
    const jobShape = fc.dictionary(
      fc.constantFrom(
        "name",
        "steps",
        "needs",
        "env",
        "image",
        "tier",
        "cache",
        "artifacts",
        "timeout_minutes",
        "bogus",
      ),
      fc.oneof(
        scalar,
        fc.array(fc.oneof(scalar, fc.dictionary(fc.constantFrom("run", "name", "path", "from_job"), scalar)), {
          maxLength: 4,
        }),
      ),
    );
    const workflow = fc.record({ version: fc.constantFrom(1, 2, "1"), jobs: fc.array(jobShape, { maxLength: 5 }) });
    fc.assert(
      fc.property(workflow, (value) => check(JSON.stringify(value))),
      { numRuns: 500 },
    );
  });

  it("on mutations of the seed example", () => {
    const edit = fc.tuple(fc.nat({ max: SEED_WORKFLOW.length }), fc.nat({ max: 8 }), fc.string({ maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), (edits) => {
        let source = SEED_WORKFLOW;
        for (const [at, remove, insert] of edits) source = source.slice(0, at) + insert + source.slice(at + remove);
        check(source);
      }),
      { numRuns: 500 },
    );
  });
});
