import { describe, expect, it } from "vitest";
import type { JobTicket } from "../control-client.ts";
import { buildStepEnv } from "./step-env.ts";

// Secrets reach a step as plain environment entries (issue 16): this one environment is what both
// drivers run the step with (sandbox-contract.ts proves each passes exactly the given env).
const ticket = {
  runId: "r",
  jobId: "j",
  epoch: 2,
  jobToken: "kjt_never-in-a-step",
  job: { name: "deploy", env: { DEPLOY_TOKEN: "from-the-workflow", MODE: "prod" } },
} as unknown as JobTicket;
const paths = { workspace: "/w", home: "/h", tmp: "/t" };

describe("buildStepEnv", () => {
  it("puts delivered secrets under their names, over a same-named workflow variable, and never the job token", () => {
    const env = buildStepEnv(ticket, paths as never, { DEPLOY_TOKEN: "the-secret", NPM_TOKEN: "npm-1" });
    expect(env).toMatchObject({ DEPLOY_TOKEN: "the-secret", NPM_TOKEN: "npm-1", MODE: "prod", KILN_ATTEMPT: "2" });
    expect(Object.values(env)).not.toContain("kjt_never-in-a-step");
  });
  it("has no secret without a delivery", () => {
    const env = buildStepEnv(ticket, paths as never);
    expect(env.DEPLOY_TOKEN).toBe("from-the-workflow");
    expect(env.NPM_TOKEN).toBeUndefined();
  });
});
