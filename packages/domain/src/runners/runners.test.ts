import { describe, expect, it } from "vitest";
import { AUTO_QUARANTINE, decideAutoQuarantine } from "./health.ts";
import { AGENT_PROTOCOL_VERSION, protocolIncompatibility } from "./protocol.ts";
import { displayedRunnerState, RUNNER_ACTIONS, runnerMayClaim, runnerMayRun } from "./states.ts";

describe("runner states (issue 22)", () => {
  it("lets online hosts claim, draining and quarantined hosts finish, and revoked hosts do nothing", () => {
    expect(runnerMayClaim("online")).toBe(true);
    expect(runnerMayClaim("draining")).toBe(false);
    expect(runnerMayClaim("quarantined")).toBe(false);
    expect(runnerMayRun("draining")).toBe(true);
    expect(runnerMayRun("quarantined")).toBe(true);
    expect(runnerMayRun("revoked")).toBe(false);
  });

  it("never leaves revoked, and undoes only what was done", () => {
    for (const rule of Object.values(RUNNER_ACTIONS)) expect(rule.from).not.toContain("revoked");
    expect(RUNNER_ACTIONS.unquarantine.from).toEqual(["quarantined"]);
    expect(RUNNER_ACTIONS.undrain.from).toEqual(["draining"]);
  });

  it("shows an online host without a heartbeat for a lease as offline", () => {
    expect(displayedRunnerState("online", 1_000, 2_000, 5_000)).toBe("online");
    expect(displayedRunnerState("online", 1_000, 7_000, 5_000)).toBe("offline");
    expect(displayedRunnerState("online", null, 7_000, 5_000)).toBe("offline");
    expect(displayedRunnerState("quarantined", null, 7_000, 5_000)).toBe("quarantined");
  });
});

describe("automatic quarantine", () => {
  it("trips at the threshold and says which signal tripped it", () => {
    expect(decideAutoQuarantine({ failures: AUTO_QUARANTINE.failures - 1, leaseExpiries: 2 })).toBeNull();
    expect(decideAutoQuarantine({ failures: 3, leaseExpiries: 1 })).toEqual({
      kind: "platform_failures",
      reason: "3 platform failures attributed to this host within 10 minutes",
    });
    expect(decideAutoQuarantine({ failures: 3, leaseExpiries: 2 })?.kind).toBe("lease_expiries");
  });
});

describe("agent protocol versions", () => {
  it("accepts the supported range (an agent that sends none speaks 1) and names both versions otherwise", () => {
    expect(protocolIncompatibility(undefined)).toBeNull();
    expect(protocolIncompatibility(AGENT_PROTOCOL_VERSION)).toBeNull();
    expect(protocolIncompatibility(AGENT_PROTOCOL_VERSION + 1)).toBe(
      `agent protocol version ${AGENT_PROTOCOL_VERSION + 1} is not supported by this control plane (protocol 1..${AGENT_PROTOCOL_VERSION}): upgrade the control plane or run an older agent`,
    );
    expect(protocolIncompatibility(0)).toContain("upgrade the agent");
  });
});
