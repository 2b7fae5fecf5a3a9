import { expect } from "vitest";
import { parseWorkflow } from "./parse-workflow.ts";
import type { ParseContext, WorkflowDefinition, WorkflowError } from "./types.ts";

export const SEED_WORKFLOW = `version: 1
jobs:
  - name: compile
    image:
      ref: registry.example.com/ci/jdk17-maven:approved
    cache:
      kind: dependencies
      version: deps-v1
      inputs: [ci/dependencies.lock]
      paths: [/work/cache/maven]
    steps:
      - ./ci/build.sh
    artifacts:
      publish:
        - name: app
          path: target/app.jar
  - name: integration-test
    image:
      ref: registry.example.com/ci/jdk21-gradle:approved
    artifacts:
      restore:
        - from_job: compile
          name: app
          path: inputs/app.jar
    steps:
      - ./ci/integration-test.sh inputs/app.jar
`;

export function parseOk(source: string, context: ParseContext = {}): WorkflowDefinition {
  const result = parseWorkflow(source, context);
  if (!result.ok) throw new Error(`expected ok, got: ${result.error.message}`);
  return result.definition;
}

export function parseError(source: string): WorkflowError {
  const result = parseWorkflow(source);
  if (result.ok) throw new Error("expected the workflow to be rejected");
  expectWellFormed(result.error);
  return result.error;
}

/** The invariants every error must satisfy, whatever input produced it. */
export function expectWellFormed(error: WorkflowError): void {
  expect([
    "WORKFLOW.INVALID",
    "WORKFLOW.EXPRESSION_NOT_ALLOWED",
    "WORKFLOW.MATRIX_TOO_LARGE",
    "WORKFLOW.ENV_NAME_RESERVED",
  ]).toContain(error.code);
  expect(error.message.length).toBeGreaterThan(0);
  expect(error.message).not.toContain("internal error");
  if (error.line === null) {
    expect(error.column).toBeNull();
    expect(error.message).not.toMatch(/^line \d/);
  } else {
    expect(error.line).toBeGreaterThanOrEqual(1);
    expect(error.column).toBeGreaterThanOrEqual(1);
    expect(error.message.startsWith(`line ${error.line}, column ${error.column}: `)).toBe(true);
  }
}

/** Builds `version: 1` plus the given job bodies, each indented under `jobs:`. */
export function workflowWithJobs(...jobs: string[]): string {
  const body = jobs
    .map((job) => {
      const [first = "", ...rest] = job.trim().split("\n");
      return [`  - ${first}`, ...rest.map((line) => `    ${line}`)].join("\n");
    })
    .join("\n");
  return `version: 1\njobs:\n${body}\n`;
}
