import { describe, expect, it } from "vitest";
import { parseError, parseOk, workflowWithJobs } from "./test-support.ts";

const single = (body: string) => workflowWithJobs(`name: a\n${body}`);
const firstJob = (body: string) => {
  const job = parseOk(single(body)).jobs[0];
  if (!job) throw new Error("expected one job");
  return job;
};

describe("parseWorkflow: secrets and secrets_required", () => {
  it("reads the declared names and the flag; a job without them declares none", () => {
    const job = firstJob("secrets: [DEPLOY_TOKEN, npm_token]\nsecrets_required: true\nsteps: [make]");
    expect(job.secrets).toEqual(["DEPLOY_TOKEN", "npm_token"]);
    expect(job.secretsRequired).toBe(true);
    const plain = firstJob("steps: [make]");
    expect(plain.secrets).toEqual([]);
    expect(plain.secretsRequired).toBe(false);
  });

  it("rejects bad, reserved and repeated names, non-lists and non-booleans, pointing at the entry", () => {
    expect(parseError(single("secrets: [1BAD]\nsteps: [make]")).path).toBe("jobs[0].secrets[0]");
    expect(parseError(single("secrets: [KILN_JOB_ID]\nsteps: [make]")).message).toContain("reserved");
    expect(parseError(single("secrets: [A, A]\nsteps: [make]")).message).toContain('lists "A" twice');
    expect(parseError(single("secrets: A\nsteps: [make]")).message).toContain("must be a list of secret names");
    expect(parseError(single("secrets_required: yes\nsteps: [make]")).message).toContain("must be true or false");
    expect(parseError(single("secrets_required: 1\nsteps: [make]")).path).toBe("jobs[0].secrets_required");
  });
});
