import type { TrustClass } from "../tenants/index.ts";
import { DEFAULT_RUNNER_SIZE, missingLabels, type RunnerRequirement, type RunnerSize } from "./runner-sizes.ts";

// Placement (issue 15, docs/adr/0022): which host may run which job. Seed 002 wants a microVM for
// every trust class and seed 000 section 11 says a kernel shared with other tenants is not
// automatically sufficient, so the weaker `process` class is admitted only where nobody else's
// work can share the host: a pool one org owns, or a single-operator development pool. The claim
// transaction re-checks these rules inside its locked statements; the same function explains to a
// waiting job why no connected host can take it.

/** Ordered weakest first: a host satisfies a pool's minimum when its class ranks at least as high. */
export const ISOLATION_CLASSES = ["process", "microvm"] as const;
export type IsolationClass = (typeof ISOLATION_CLASSES)[number];

/**
 * What a host reports it gives a step (issue 28): a pool's minimum is always one of
 * ISOLATION_CLASSES, while a host may also be `none`, a process host whose steps run as plain host
 * processes (no namespaces). Such an agent starts only when its operator says so explicitly
 * (KILN_ALLOW_UNISOLATED), and placement admits it in a development pool only, for trusted work.
 */
export const HOST_ISOLATIONS = ["none", ...ISOLATION_CLASSES] as const;
export type HostIsolation = (typeof HOST_ISOLATIONS)[number];

export type PoolTenancy = { kind: "shared" } | { kind: "org"; orgId: string };

export interface PoolPolicy {
  name: string;
  /** The weakest isolation class a host of this pool may have. */
  minIsolation: IsolationClass;
  /** Whether untrusted runs (fork PRs, non-members) may be placed in this pool at all. */
  admitsUntrusted: boolean;
  /** Untrusted runs on process isolation: off by default, never for a shared pool. */
  untrustedOnProcess: boolean;
  tenancy: PoolTenancy;
  /** An operator's own development pool: one operator, every org is theirs, so process hosts may serve several. */
  development: boolean;
}

/**
 * A pool nobody configured: shared, microVM hosts only, untrusted runs admitted (on microVMs).
 * The safe reading of a missing row is the strictest one that still lets VM-isolated capacity work.
 */
export function defaultPoolPolicy(name: string): PoolPolicy {
  return {
    name,
    minIsolation: "microvm",
    admitsUntrusted: true,
    untrustedOnProcess: false,
    tenancy: { kind: "shared" },
    development: false,
  };
}

export interface HostFacts {
  isolation: HostIsolation;
  /** The org the host's credential is bound to, if any (an org's own host). */
  orgId: string | null;
  /** Runner labels the agent advertises (KILN_AGENT_LABELS); none when absent. */
  labels?: readonly string[];
  /** Sizes the agent serves (KILN_AGENT_SIZES); small only when absent (agents from before sizes). */
  sizes?: readonly RunnerSize[];
}

export interface JobFacts {
  orgId: string;
  trustClass: TrustClass;
  /** The job's `runs_on` labels and size (issue 20); none and small when absent. */
  requires?: RunnerRequirement;
}

export type PlacementRefusal =
  | "pool_not_for_org"
  | "host_not_for_org"
  | "isolation_below_pool_minimum"
  | "unisolated_host_needs_development_pool"
  | "pool_refuses_untrusted"
  | "untrusted_needs_microvm"
  | "process_host_serves_one_org"
  | "host_lacks_labels"
  | "host_lacks_size";

export type PlacementDecision = { ok: true } | { ok: false; refusal: PlacementRefusal };

export function isolationAtLeast(have: HostIsolation, need: IsolationClass): boolean {
  return HOST_ISOLATIONS.indexOf(have) >= HOST_ISOLATIONS.indexOf(need);
}

/** Whether the pool's configuration is one the operator may save (shared pools never run untrusted work on process hosts). */
export function poolPolicyProblem(p: PoolPolicy): string | null {
  if (p.untrustedOnProcess && p.tenancy.kind === "shared" && !p.development)
    return "a shared pool cannot run untrusted work on process isolation";
  if (p.untrustedOnProcess && !p.admitsUntrusted) return "untrusted_on_process needs admits_untrusted";
  return null;
}

/**
 * Whether this host may run untrusted work at all; the claim uses it to leave untrusted jobs out of a
 * host's candidates instead of picking and refusing them.
 */
export function untrustedAllowedOn(pool: PoolPolicy, host: HostFacts): boolean {
  if (!pool.admitsUntrusted || host.isolation === "none") return false;
  if (host.isolation === "process") return pool.untrustedOnProcess && poolPolicyProblem(pool) === null;
  return true;
}

/** May this host, in this pool, run this job? Every rule is a refusal with a name; the order is the explanation's. */
export function decidePlacement(pool: PoolPolicy, host: HostFacts, job: JobFacts): PlacementDecision {
  if (pool.tenancy.kind === "org" && pool.tenancy.orgId !== job.orgId) return refuse("pool_not_for_org");
  if (host.orgId !== null && host.orgId !== job.orgId) return refuse("host_not_for_org");
  // An unisolated host (steps as plain host processes) serves only a single operator's development
  // pool, whatever its minimum says: it is no isolation class at all.
  if (host.isolation === "none" && !pool.development) return refuse("unisolated_host_needs_development_pool");
  if (host.isolation !== "none" && !isolationAtLeast(host.isolation, pool.minIsolation))
    return refuse("isolation_below_pool_minimum");
  if (job.trustClass === "untrusted" && !untrustedAllowedOn(pool, host))
    return refuse(pool.admitsUntrusted ? "untrusted_needs_microvm" : "pool_refuses_untrusted");
  // A process host shares one kernel between its jobs: it may serve one org only, which a host
  // bound to an org, or a pool owned by one, guarantees. Only a development pool is exempt.
  if (host.isolation !== "microvm" && !pool.development && host.orgId === null && pool.tenancy.kind !== "org")
    return refuse("process_host_serves_one_org");
  // Runner selection last: a host refused here was otherwise fit, which makes its reason the telling one.
  if (job.requires) {
    if (missingLabels(job.requires.labels, host.labels ?? []).length > 0) return refuse("host_lacks_labels");
    if (!hostSizes(host).includes(job.requires.size)) return refuse("host_lacks_size");
  }
  return { ok: true };
}

function hostSizes(host: HostFacts): readonly RunnerSize[] {
  return host.sizes ?? [DEFAULT_RUNNER_SIZE];
}

const WAITING_MESSAGES: Record<PlacementRefusal, string> = {
  pool_not_for_org: "waiting for a host of this org's pool: the pool belongs to another org",
  host_not_for_org: "waiting for a host this org may use: connected hosts belong to another org",
  isolation_below_pool_minimum: "waiting for a host with the isolation this pool requires",
  unisolated_host_needs_development_pool:
    "waiting for an isolated host: hosts without namespaces serve development pools only",
  pool_refuses_untrusted: "waiting: this pool does not admit untrusted runs",
  untrusted_needs_microvm: "waiting for a VM-isolated host: untrusted runs need microVM isolation",
  process_host_serves_one_org:
    "waiting for a VM-isolated host: process-isolated hosts in a shared pool serve one org only",
  host_lacks_labels: "waiting for a host with this job's labels",
  host_lacks_size: "waiting for a host that serves this job's size",
};

export interface WaitingReason {
  code: PlacementRefusal | "no_connected_host";
  message: string;
}

/**
 * Why a READY job that no connected host may take is waiting, or null when some host may take it
 * (then it simply waits its turn). The most telling refusal is the one of the host that got furthest.
 */
export function placementWaitingReason(
  pool: PoolPolicy,
  hosts: readonly HostFacts[],
  job: JobFacts,
): WaitingReason | null {
  const labels = job.requires?.labels ?? [];
  if (hosts.length === 0)
    return labels.length > 0
      ? { code: "host_lacks_labels", message: labelsMessage(pool.name, labels) }
      : { code: "no_connected_host", message: `waiting for a host in pool ${pool.name}` };
  let best: PlacementRefusal | null = null;
  // Of the hosts refused for labels, the one missing fewest names what is missing.
  let fewestMissing: string[] | null = null;
  for (const host of hosts) {
    const d = decidePlacement(pool, host, job);
    if (d.ok) return null;
    if (d.refusal === "host_lacks_labels") {
      const missing = missingLabels(labels, host.labels ?? []);
      if (fewestMissing === null || missing.length < fewestMissing.length) fewestMissing = missing;
    }
    if (best === null || REFUSAL_ORDER.indexOf(d.refusal) > REFUSAL_ORDER.indexOf(best)) best = d.refusal;
  }
  const code = best ?? "no_connected_host";
  return { code, message: waitingMessage(code, pool.name, fewestMissing ?? labels, job.requires?.size) };
}

function labelsMessage(pool: string, labels: readonly string[]): string {
  return `no host in pool ${pool} has labels [${labels.join(", ")}]`;
}

function waitingMessage(
  code: PlacementRefusal | "no_connected_host",
  pool: string,
  labels: readonly string[],
  size: RunnerSize | undefined,
): string {
  if (code === "no_connected_host") return `waiting for a host in pool ${pool}`;
  if (code === "host_lacks_labels") return labelsMessage(pool, labels);
  if (code === "host_lacks_size") return `no host in pool ${pool} serves size ${size ?? DEFAULT_RUNNER_SIZE}`;
  return WAITING_MESSAGES[code];
}

// Later checks in decidePlacement mean the host passed the earlier ones: it came closer.
const REFUSAL_ORDER: readonly PlacementRefusal[] = [
  "pool_not_for_org",
  "host_not_for_org",
  "isolation_below_pool_minimum",
  "pool_refuses_untrusted",
  "untrusted_needs_microvm",
  "process_host_serves_one_org",
  "host_lacks_labels",
  "host_lacks_size",
];

function refuse(refusal: PlacementRefusal): PlacementDecision {
  return { ok: false, refusal };
}
