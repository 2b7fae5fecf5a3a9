import { describe, expect, it } from "vitest";
import { MATRIX_LIMITS, matrixEnvName, parseWorkflow } from "./index.ts";
import { parseError, parseOk, workflowWithJobs } from "./test-support.ts";

const matrixJob = (strategy: string, extra = "") =>
  `name: test\nimage: registry.example.com/jdk:\${{ matrix.jdk }}\nsteps: [./test.sh]\nstrategy:\n${strategy
    .trim()
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n")}\n${extra}`;

const TWO_BY_TWO = `matrix:\n  jdk: [17, 21]\n  os: [linux, mac]`;

describe("matrix expansion", () => {
  it("expands the product in the order written, named by its values", () => {
    const { jobs } = parseOk(workflowWithJobs(matrixJob(TWO_BY_TWO)));
    expect(jobs.map((j) => j.name)).toEqual([
      "test (jdk: 17, os: linux)",
      "test (jdk: 17, os: mac)",
      "test (jdk: 21, os: linux)",
      "test (jdk: 21, os: mac)",
    ]);
    expect(jobs.map((j) => j.index)).toEqual([0, 1, 2, 3]);
    expect(jobs[1]?.env).toEqual({ KILN_MATRIX_JDK: "17", KILN_MATRIX_OS: "mac" });
    expect(jobs[2]?.image).toEqual({ ref: "registry.example.com/jdk:21" });
    expect(jobs[3]?.matrix).toEqual({
      job: "test",
      values: { jdk: "21", os: "mac" },
      maxParallel: null,
      failFast: true,
    });
  });

  it("makes a job that needs a matrix job wait for every expansion", () => {
    const { jobs } = parseOk(
      workflowWithJobs(
        "name: lint\nsteps: [./lint.sh]",
        matrixJob(TWO_BY_TWO),
        "name: deploy\nsteps: [./d.sh]\nneeds: [test]",
      ),
    );
    expect(jobs.map((j) => j.name)).toHaveLength(6);
    // test has no `needs`, so each expansion waits for lint, the job before it.
    expect(jobs.slice(1, 5).map((j) => j.needs)).toEqual([[0], [0], [0], [0]]);
    expect(jobs[5]).toMatchObject({ name: "deploy", index: 5, needs: [1, 2, 3, 4] });
  });

  it("removes excluded combinations and merges or adds include entries (GitHub's rules)", () => {
    const { jobs } = parseOk(
      workflowWithJobs(
        matrixJob(`${TWO_BY_TWO}
exclude:
  - {jdk: 17, os: mac}
include:
  - {os: linux, experimental: "yes"}
  - {jdk: 22, os: linux}`),
      ),
    );
    expect(jobs.map((j) => j.matrix?.values)).toEqual([
      { jdk: "17", os: "linux", experimental: "yes" },
      { jdk: "21", os: "linux", experimental: "yes" },
      { jdk: "21", os: "mac" },
      { jdk: "22", os: "linux" },
    ]);
    expect(jobs[0]?.name).toBe("test (jdk: 17, os: linux, experimental: yes)");
    expect(jobs[0]?.env.KILN_MATRIX_EXPERIMENTAL).toBe("yes");
  });

  it("accepts an include-only matrix, max_parallel and fail_fast", () => {
    const { jobs } = parseOk(
      workflowWithJobs(
        `name: t\nsteps: [./t.sh]\nstrategy:\n  include: [{jdk: 17}, {jdk: 21}]\n  max_parallel: 1\n  fail_fast: false`,
      ),
    );
    expect(jobs.map((j) => [j.name, j.matrix?.maxParallel, j.matrix?.failFast])).toEqual([
      ["t (jdk: 17)", 1, false],
      ["t (jdk: 21)", 1, false],
    ]);
  });

  it("uses a name that places the values itself as is", () => {
    const { jobs } = parseOk(
      workflowWithJobs("name: test-${{ matrix.os }}\nsteps: [./t.sh]\nstrategy:\n  matrix:\n    os: [linux, mac]"),
    );
    expect(jobs.map((j) => j.name)).toEqual(["test-linux", "test-mac"]);
  });

  it("refuses more than 256 expansions of one job with a named error", () => {
    const values = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(", ")}]`;
    const error = parseError(workflowWithJobs(matrixJob(`matrix:\n  jdk: ${values(16)}\n  os: ${values(17)}`)));
    expect(error.code).toBe("WORKFLOW.MATRIX_TOO_LARGE");
    expect(error.message).toContain("expands to 272 combinations; at most 256 are allowed");
    expect(
      parseOk(workflowWithJobs(matrixJob(`matrix:\n  jdk: ${values(16)}\n  os: ${values(16)}`))).jobs,
    ).toHaveLength(MATRIX_LIMITS.maxExpansions);
    // Exclude counts: 17x16 minus 16 is exactly the limit.
    const trimmed = `matrix:\n  jdk: ${values(16)}\n  os: ${values(17)}\nexclude: [{os: 16}]`;
    expect(parseOk(workflowWithJobs(matrixJob(trimmed))).jobs).toHaveLength(256);
    // A product that would take gigabytes to list is refused before it is built.
    const huge = parseError(
      workflowWithJobs(
        matrixJob(`matrix:\n${["a", "b", "c"].map((k) => `  ${k}: ${values(100)}`).join("\n")}\n  jdk: [1]`),
      ),
    );
    expect(huge.code).toBe("WORKFLOW.MATRIX_TOO_LARGE");
  });

  it("refuses an empty expansion, unknown exclude keys and misplaced include", () => {
    expect(parseError(workflowWithJobs(matrixJob("matrix:\n  jdk: [17]\nexclude: [{jdk: 17}]"))).message).toContain(
      "expands to no jobs",
    );
    expect(parseError(workflowWithJobs(matrixJob("matrix:\n  jdk: [17]\nexclude: [{os: mac}]"))).message).toContain(
      'names "os", which is not a matrix key',
    );
    expect(parseError(workflowWithJobs(matrixJob("matrix:\n  jdk: [17]\n  include: [{jdk: 21}]"))).message).toContain(
      "include belongs under strategy, beside matrix",
    );
  });

  it("sanitises keys into env names and refuses two keys that collide", () => {
    expect(matrixEnvName("node-version")).toBe("KILN_MATRIX_NODE_VERSION");
    expect(
      parseError(workflowWithJobs(matrixJob("matrix:\n  node-v: [1]\n  node_v: [2]\n  jdk: [1]"))).message,
    ).toContain("both become KILN_MATRIX_NODE_V");
    expect(parseError(workflowWithJobs(matrixJob('matrix:\n  "a b": [1]\n  jdk: [1]'))).message).toContain(
      "must be 1-64 characters matching",
    );
  });

  it("refuses restoring artifacts from a matrix job (which expansion?)", () => {
    const error = parseError(
      workflowWithJobs(
        `${matrixJob(TWO_BY_TWO)}artifacts:\n  publish: [{name: out, path: out}]`,
        "name: use\nsteps: [./u.sh]\nneeds: [test]\nartifacts:\n  restore: [{from_job: test, name: out, path: in}]",
      ),
    );
    expect(error.message).toContain('"test" is a matrix job');
  });
});

describe("expressions", () => {
  it("substitutes matrix values and inputs in name, image, cache version and env values", () => {
    const source = workflowWithJobs(`name: build-\${{ inputs.flavour }}
image: registry.example.com/\${{ matrix.os }}:1
env:
  TARGET: "\${{ matrix.os }}-\${{ inputs.flavour }}"
  MISSING: "[\${{ inputs.absent }}]"
cache:
  kind: dependencies
  version: deps-\${{ matrix.os }}
  inputs: []
  paths: [/work/cache]
steps: [./b.sh]
strategy:
  matrix:
    os: [linux]`);
    const [job] = parseOk(source, { inputs: { flavour: "release" } }).jobs;
    expect(job?.name).toBe("build-release");
    expect(job?.image?.ref).toBe("registry.example.com/linux:1");
    expect(job?.env).toEqual({ TARGET: "linux-release", MISSING: "[]", KILN_MATRIX_OS: "linux" });
    expect(job?.cache?.version).toBe("deps-linux");
  });

  it("refuses an expression in a step's shell text with a named error", () => {
    for (const step of ["echo ${{ matrix.os }}", "echo ${{ inputs.x }}", "- {name: x, run: 'echo ${{ inputs.x }}'}"]) {
      const steps = step.startsWith("-") ? `steps:\n  ${step}` : `steps: ["${step}"]`;
      const error = parseError(workflowWithJobs(`name: t\n${steps}\nstrategy:\n  matrix:\n    os: [linux]`));
      expect(error.code).toBe("WORKFLOW.EXPRESSION_NOT_ALLOWED");
      expect(error.message).toContain("$KILN_MATRIX_<KEY>");
    }
    expect(parseError(workflowWithJobs("name: t\nsteps:\n  - {name: '${{ inputs.x }}', run: ./t.sh}")).code).toBe(
      "WORKFLOW.EXPRESSION_NOT_ALLOWED",
    );
    const artifactPath = "name: t\nsteps: [./t.sh]\nartifacts:\n  publish: [{name: o, path: 'out/${{ inputs.x }}'}]";
    expect(parseError(workflowWithJobs(artifactPath)).code).toBe("WORKFLOW.EXPRESSION_NOT_ALLOWED");
  });

  it("refuses references to unknown matrix keys, other contexts and matrix values in the workflow env", () => {
    expect(parseError(workflowWithJobs("name: t\nimage: x:${{ matrix.os }}\nsteps: [./t.sh]")).message).toContain(
      "the job has no strategy.matrix",
    );
    expect(
      parseError(workflowWithJobs(matrixJob("matrix:\n  jdk: [1]", "env:\n  A: ${{ matrix.nope }}"))).message,
    ).toContain('matrix key "nope"');
    expect(parseError(workflowWithJobs("name: t\nenv: {A: '${{ secrets.TOKEN }}'}\nsteps: [./t.sh]")).code).toBe(
      "WORKFLOW.EXPRESSION_NOT_ALLOWED",
    );
    const topLevel = "version: 1\nenv:\n  A: ${{ matrix.os }}\njobs:\n  - name: t\n    steps: [./t.sh]\n";
    expect(parseError(topLevel).message).toContain("the job has no strategy.matrix");
    const withInputs = parseOk("version: 1\nenv:\n  A: v${{ inputs.n }}\njobs:\n  - name: t\n    steps: [./t.sh]\n", {
      inputs: { n: 3 },
    });
    expect(withInputs.env).toEqual({ A: "v3" });
  });

  it("keeps a hostile matrix value as data: only in env, never in the steps", () => {
    const hostile = ["$(curl evil)", '"; rm -rf /', "`id`", "${{ inputs.x }}"];
    const source = workflowWithJobs(
      `name: t\nsteps: [./t.sh]\nstrategy:\n  matrix:\n    v: [${hostile.map((v) => JSON.stringify(v)).join(", ")}]`,
    );
    const { jobs } = parseOk(source, { inputs: { x: "INJECTED" } });
    expect(jobs.map((j) => j.env.KILN_MATRIX_V)).toEqual(hostile);
    for (const job of jobs) expect(job.steps).toEqual(["./t.sh"]);
    // A value that looks like an expression is not evaluated a second time.
    expect(JSON.stringify(jobs)).not.toContain("INJECTED");
  });

  it("re-checks an image reference once a value is substituted into it", () => {
    const result = parseWorkflow(
      workflowWithJobs("name: t\nimage: 'x/${{ matrix.v }}'\nsteps: [./t.sh]\nstrategy:\n  matrix:\n    v: ['a b']"),
    );
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toContain("without whitespace");
  });
});
