import { engineConfigFromEnv, engineEnvSchema } from "@kiln/engine";
import { describe, expect, it } from "vitest";
import { parseWorkersEnv, workersEngineConfig } from "./env.ts";

// The workers and the web app build their engine config from the engine's one schema and mapping
// (apps/web/src/server/engine-config.test.ts checks the web side against the same reference), so
// for the same environment the two processes agree on leases, retries, backoff and dispatch.
const RECORDS: Record<string, string>[] = [
  { DATABASE_URL: "postgres://unused" },
  {
    DATABASE_URL: "postgres://unused",
    KILN_LEASE_TTL_MS: "4000",
    KILN_HEARTBEAT_MS: "900",
    KILN_RETRY_BUDGET: "5",
    KILN_BACKOFF_BASE_MS: "1234",
    KILN_BACKOFF_MAX_MS: "98765",
    KILN_DISPATCH_POLICY: "fifo",
    KILN_DISPATCH_VIEW_MS: "50",
    S3_ENDPOINT: "http://127.0.0.1:4568",
  },
];

describe("workers engine config", () => {
  it("is the engine's mapping of the engine's schema, for defaults and for every variable set", () => {
    for (const record of RECORDS) {
      expect(workersEngineConfig(parseWorkersEnv(record))).toEqual(engineConfigFromEnv(engineEnvSchema.parse(record)));
    }
  });

  it("honours the backoff settings and keeps the lost-hint re-dispatch within one lease", () => {
    expect(workersEngineConfig(parseWorkersEnv(RECORDS[1] ?? {}))).toMatchObject({
      backoffBaseMs: 1234,
      backoffMaxMs: 98765,
      retryBudget: 5,
      dispatchPolicy: "fifo",
      redispatchAfterMs: 4000,
    });
    expect(
      workersEngineConfig(parseWorkersEnv({ DATABASE_URL: "x", KILN_LEASE_TTL_MS: "500" })).redispatchAfterMs,
    ).toBe(2000);
  });

  it("refuses bad engine values at boot instead of running with them", () => {
    expect(() => parseWorkersEnv({ DATABASE_URL: "x", KILN_BACKOFF_BASE_MS: "soon" })).toThrow(/KILN_BACKOFF_BASE_MS/);
    expect(() => parseWorkersEnv({ DATABASE_URL: "x", KILN_DISPATCH_POLICY: "random" })).toThrow(
      /KILN_DISPATCH_POLICY/,
    );
  });
});
