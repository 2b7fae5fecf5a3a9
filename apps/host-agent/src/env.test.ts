import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseEnv } from "./env.ts";

describe("parseEnv", () => {
  it("needs only the host credential and fills safe defaults", () => {
    const env = parseEnv({ KILN_AGENT_TOKEN: "t" }, 4242);
    expect(env).toMatchObject({
      KILN_CONTROL_URL: "http://127.0.0.1:3000",
      KILN_SANDBOX_DRIVER: "process",
      KILN_POOL: "default",
      KILN_AGENT_SLOTS: 2,
      KILN_WARM_POOL_SIZE: 0,
      KILN_WORK_DIR: path.resolve(".kiln-data/agent-4242"),
      KILN_CLAIM_WAIT_MS: 20_000,
      KILN_CANCEL_GRACE_MS: 5_000,
      KILN_MICROVM_ASSETS: path.resolve(".kiln-data/microvm-assets"),
      KILN_MICROVM_ACCEL: "auto",
    });
    expect(env.KILN_HOSTNAME).toMatch(/-4242$/);
  });

  it("treats empty as unset, coerces numbers and rejects nonsense", () => {
    expect(parseEnv({ KILN_AGENT_TOKEN: "t", KILN_AGENT_SLOTS: "", KILN_CLAIM_WAIT_MS: "500" })).toMatchObject({
      KILN_AGENT_SLOTS: 2,
      KILN_CLAIM_WAIT_MS: 500,
    });
    expect(() => parseEnv({})).toThrow(/KILN_AGENT_TOKEN/);
    expect(() => parseEnv({ KILN_AGENT_TOKEN: "t", KILN_AGENT_SLOTS: "0" })).toThrow();
    expect(() => parseEnv({ KILN_AGENT_TOKEN: "t", KILN_CLAIM_WAIT_MS: "60000" })).toThrow();
    expect(() => parseEnv({ KILN_AGENT_TOKEN: "t", KILN_SANDBOX_DRIVER: "docker" })).toThrow();
    expect(parseEnv({ KILN_AGENT_TOKEN: "t", KILN_SANDBOX_DRIVER: "microvm" }).KILN_SANDBOX_DRIVER).toBe("microvm");
  });
});

describe("runner labels and sizes (issue 20)", () => {
  it("advertises no labels and small by default, and parses lists", () => {
    expect(parseEnv({ KILN_AGENT_TOKEN: "t" })).toMatchObject({ KILN_AGENT_LABELS: [], KILN_AGENT_SIZES: ["small"] });
    expect(
      parseEnv({ KILN_AGENT_TOKEN: "t", KILN_AGENT_LABELS: "gpu, cuda12,gpu", KILN_AGENT_SIZES: "large,small" }),
    ).toMatchObject({ KILN_AGENT_LABELS: ["cuda12", "gpu"], KILN_AGENT_SIZES: ["large", "small"] });
  });

  it("refuses labels outside the alphabet and unknown sizes", () => {
    expect(() => parseEnv({ KILN_AGENT_TOKEN: "t", KILN_AGENT_LABELS: "GPU" })).toThrow();
    expect(() => parseEnv({ KILN_AGENT_TOKEN: "t", KILN_AGENT_SIZES: "huge" })).toThrow();
  });
});
