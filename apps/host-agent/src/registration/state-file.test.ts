import { chmod, mkdtemp, readdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseEnv } from "../env.ts";
import { resolveIdentity } from "./identity.ts";
import { readAgentState, STATE_FILE, writeAgentState } from "./state-file.ts";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tmp(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), "kiln-agent-state-"));
  dirs.push(d);
  return d;
}

const state = {
  version: 1 as const,
  control_url: "http://127.0.0.1:3999",
  runner_id: "r-1",
  credential: "kagent_test_credential",
  org: "acme",
  pool: "acme/gpu",
  name: "gpu-1",
  labels: ["gpu"],
};

describe("the registered agent's state directory (issue 22)", () => {
  it("stores the credential 0600 in a 0700 directory, leaving no temporary file, and runs from it", async () => {
    const dir = path.join(await tmp(), "state");
    const file = await writeAgentState(dir, state);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readdir(dir)).toEqual([STATE_FILE]);
    const env = parseEnv({ KILN_AGENT_STATE_DIR: dir });
    expect(env.KILN_AGENT_TOKEN).toBeUndefined();
    const id = await resolveIdentity(env);
    expect(id).toEqual({
      credential: state.credential,
      controlUrl: state.control_url,
      runnerLabels: ["gpu"],
      source: "state",
    });
    // An explicit KILN_CONTROL_URL and labels still win over what was registered.
    const over = await resolveIdentity(
      parseEnv({ KILN_AGENT_STATE_DIR: dir, KILN_CONTROL_URL: "http://10.0.0.1:3000", KILN_AGENT_LABELS: "cpu" }),
    );
    expect(over).toMatchObject({ controlUrl: "http://10.0.0.1:3000", runnerLabels: ["cpu"] });
  });

  it("refuses a state file others can read, and a directory with no registration", async () => {
    const dir = await tmp();
    const file = await writeAgentState(dir, state);
    await chmod(file, 0o644);
    await expect(readAgentState(dir)).rejects.toThrow(/readable by others \(mode 644\)/);
    await expect(readAgentState(await tmp())).rejects.toThrow(/no registered agent/);
  });

  it("needs a credential from somewhere", () => {
    expect(() => parseEnv({})).toThrow(/KILN_AGENT_TOKEN is required.*KILN_AGENT_STATE_DIR/s);
  });
});
