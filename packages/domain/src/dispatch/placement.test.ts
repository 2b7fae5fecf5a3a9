import { describe, expect, it } from "vitest";
import {
  decidePlacement,
  defaultPoolPolicy,
  placementWaitingReason,
  poolPolicyProblem,
  untrustedAllowedOn,
  type HostFacts,
  type PoolPolicy,
} from "./placement.ts";

const shared = defaultPoolPolicy("default");
const vm: HostFacts = { isolation: "microvm", orgId: null };
const proc: HostFacts = { isolation: "process", orgId: null };
const trusted = { orgId: "org-a", trustClass: "trusted" as const };
const untrusted = { orgId: "org-a", trustClass: "untrusted" as const };
const devPool: PoolPolicy = { ...shared, name: "dev", minIsolation: "process", development: true };
const orgPool: PoolPolicy = {
  ...shared,
  name: "a-own",
  minIsolation: "process",
  tenancy: { kind: "org", orgId: "org-a" },
};

describe("decidePlacement", () => {
  it("admits an unisolated host (no namespaces) only in a development pool, and never for untrusted work (issue 28)", () => {
    const bare: HostFacts = { isolation: "none", orgId: null };
    const ownBare: HostFacts = { isolation: "none", orgId: "org-a" };
    expect(decidePlacement(devPool, bare, trusted)).toEqual({ ok: true });
    expect(decidePlacement(shared, bare, trusted)).toEqual({
      ok: false,
      refusal: "unisolated_host_needs_development_pool",
    });
    // Not even in an org's own pool, on the org's own host: it is no isolation class at all.
    expect(decidePlacement(orgPool, ownBare, trusted)).toEqual({
      ok: false,
      refusal: "unisolated_host_needs_development_pool",
    });
    const laxDev: PoolPolicy = { ...devPool, untrustedOnProcess: true };
    expect(decidePlacement(laxDev, bare, untrusted)).toEqual({ ok: false, refusal: "untrusted_needs_microvm" });
    expect(untrustedAllowedOn(laxDev, bare)).toBe(false);
  });

  it("places every trust class on a microVM host of a shared pool", () => {
    expect(decidePlacement(shared, vm, trusted)).toEqual({ ok: true });
    expect(decidePlacement(shared, vm, untrusted)).toEqual({ ok: true });
  });

  it("refuses a process host in a pool that requires microVMs", () => {
    expect(decidePlacement(shared, proc, trusted)).toEqual({ ok: false, refusal: "isolation_below_pool_minimum" });
  });

  it("never puts an untrusted run on process isolation unless an org's own pool admits it", () => {
    const lax: PoolPolicy = { ...shared, minIsolation: "process" };
    expect(decidePlacement(lax, { isolation: "process", orgId: "org-a" }, untrusted)).toEqual({
      ok: false,
      refusal: "untrusted_needs_microvm",
    });
    expect(decidePlacement(orgPool, proc, untrusted)).toEqual({ ok: false, refusal: "untrusted_needs_microvm" });
    expect(decidePlacement({ ...orgPool, untrustedOnProcess: true }, proc, untrusted)).toEqual({ ok: true });
    // A shared pool flagged anyway (a row written around the CLI) still refuses.
    expect(decidePlacement({ ...lax, untrustedOnProcess: true }, proc, untrusted)).toEqual({
      ok: false,
      refusal: "untrusted_needs_microvm",
    });
  });

  it("lets a process host of a shared pool serve only the org its credential is bound to", () => {
    const lax: PoolPolicy = { ...shared, minIsolation: "process" };
    expect(decidePlacement(lax, proc, trusted)).toEqual({ ok: false, refusal: "process_host_serves_one_org" });
    expect(decidePlacement(lax, { isolation: "process", orgId: "org-a" }, trusted)).toEqual({ ok: true });
    expect(decidePlacement(lax, { isolation: "process", orgId: "org-b" }, trusted)).toEqual({
      ok: false,
      refusal: "host_not_for_org",
    });
  });

  it("keeps an org's pool to that org whatever its hosts", () => {
    expect(decidePlacement(orgPool, vm, { orgId: "org-b", trustClass: "trusted" })).toEqual({
      ok: false,
      refusal: "pool_not_for_org",
    });
    expect(decidePlacement(orgPool, proc, trusted)).toEqual({ ok: true });
  });

  it("lets a development pool's process host serve several orgs' trusted runs, untrusted only when flagged", () => {
    expect(decidePlacement(devPool, proc, trusted)).toEqual({ ok: true });
    expect(decidePlacement(devPool, proc, { orgId: "org-b", trustClass: "trusted" })).toEqual({ ok: true });
    expect(decidePlacement(devPool, proc, untrusted)).toEqual({ ok: false, refusal: "untrusted_needs_microvm" });
    expect(decidePlacement({ ...devPool, untrustedOnProcess: true }, proc, untrusted)).toEqual({ ok: true });
  });

  it("honours a pool that admits no untrusted runs even on microVMs", () => {
    expect(decidePlacement({ ...shared, admitsUntrusted: false }, vm, untrusted)).toEqual({
      ok: false,
      refusal: "pool_refuses_untrusted",
    });
  });
});

describe("poolPolicyProblem", () => {
  it("refuses untrusted-on-process for a shared pool and accepts it for an org's pool", () => {
    expect(poolPolicyProblem({ ...shared, minIsolation: "process", untrustedOnProcess: true })).toMatch(/shared pool/);
    expect(poolPolicyProblem({ ...orgPool, untrustedOnProcess: true })).toBeNull();
    expect(poolPolicyProblem({ ...orgPool, untrustedOnProcess: true, admitsUntrusted: false })).toMatch(
      /admits_untrusted/,
    );
  });
});

describe("placementWaitingReason", () => {
  it("names the VM requirement when only process hosts are connected for an untrusted run", () => {
    expect(placementWaitingReason(devPool, [proc], untrusted)).toEqual({
      code: "untrusted_needs_microvm",
      message: "waiting for a VM-isolated host: untrusted runs need microVM isolation",
    });
  });

  it("is null when any connected host may take the job", () => {
    expect(placementWaitingReason(shared, [proc, vm], untrusted)).toBeNull();
  });

  it("says no host is connected when none is", () => {
    expect(placementWaitingReason(shared, [], trusted)?.code).toBe("no_connected_host");
  });

  it("reports the refusal of the host that came closest", () => {
    const lax: PoolPolicy = { ...shared, minIsolation: "process" };
    const other: HostFacts = { isolation: "process", orgId: "org-b" };
    expect(placementWaitingReason(lax, [other, proc], trusted)?.code).toBe("process_host_serves_one_org");
  });
});

describe("untrustedAllowedOn", () => {
  it("agrees with decidePlacement for untrusted runs on every kind of host and pool", () => {
    const pools: PoolPolicy[] = [
      shared,
      devPool,
      { ...devPool, untrustedOnProcess: true },
      orgPool,
      { ...orgPool, untrustedOnProcess: true },
      { ...shared, admitsUntrusted: false },
    ];
    for (const pool of pools)
      for (const host of [vm, { ...proc, orgId: "org-a" }])
        expect(untrustedAllowedOn(pool, host)).toBe(decidePlacement(pool, host, untrusted).ok);
  });
});

describe("runner selection (issue 20)", () => {
  const gpuJob = { ...trusted, requires: { labels: ["gpu"], size: "small" as const } };
  const largeJob = { ...trusted, requires: { labels: [], size: "large" as const } };

  it("places a job only on a host with all of its labels and its size", () => {
    expect(decidePlacement(shared, vm, gpuJob)).toEqual({ ok: false, refusal: "host_lacks_labels" });
    expect(decidePlacement(shared, { ...vm, labels: ["gpu", "cuda"] }, gpuJob)).toEqual({ ok: true });
    expect(decidePlacement(shared, vm, largeJob)).toEqual({ ok: false, refusal: "host_lacks_size" });
    expect(decidePlacement(shared, { ...vm, sizes: ["small", "large"] }, largeJob)).toEqual({ ok: true });
    // A host advertising sizes without small no longer takes jobs that name no size.
    expect(
      decidePlacement(shared, { ...vm, sizes: ["large"] }, { ...trusted, requires: { labels: [], size: "small" } }),
    ).toEqual({
      ok: false,
      refusal: "host_lacks_size",
    });
  });

  it("never lets labels override the isolation rules", () => {
    expect(decidePlacement(shared, { ...proc, labels: ["gpu"] }, gpuJob)).toEqual({
      ok: false,
      refusal: "isolation_below_pool_minimum",
    });
  });

  it("names the missing labels of the closest host, and says so with no host connected", () => {
    const job = { ...trusted, requires: { labels: ["arm64", "gpu"], size: "small" as const } };
    expect(placementWaitingReason(shared, [vm, { ...vm, labels: ["arm64"] }], job)).toEqual({
      code: "host_lacks_labels",
      message: "no host in pool default has labels [gpu]",
    });
    expect(placementWaitingReason(shared, [], gpuJob)).toEqual({
      code: "host_lacks_labels",
      message: "no host in pool default has labels [gpu]",
    });
    expect(placementWaitingReason(shared, [vm], largeJob)?.message).toBe("no host in pool default serves size large");
    expect(placementWaitingReason(shared, [vm, { ...vm, labels: ["gpu"] }], gpuJob)).toBeNull();
  });
});
