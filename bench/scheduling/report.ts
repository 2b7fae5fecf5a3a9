import { jainIndex, percentileOfSorted } from "@kiln/domain/dispatch";
import type { SimOutput } from "./engine.ts";
import type { TenantClass, Workload } from "./workload.ts";

const CLASSES: TenantClass[] = ["small", "medium", "large"];
const WAIT_GROUPS = [
  "small",
  "medium",
  "large",
  "all",
  "small interactive",
  "interactive",
  "background",
  "within entitlement, interactive",
  "within entitlement, scheduled+background",
] as const;
type WaitGroup = (typeof WAIT_GROUPS)[number];

export interface WaitStats {
  jobs: number;
  p50: number;
  p95: number;
  p99: number;
}

export interface PolicySummary {
  policy: string;
  waitSeconds: Record<WaitGroup, WaitStats>;
  /** Per-tenant p95 wait (s): the median org's and the worst org's, per class. */
  orgP95Seconds: Record<TenantClass, { median: number; worst: number }>;
  jainNormalisedService: number;
  contendedSampleShare: number;
  jainOrgSlowdown: number;
  utilisationArrivalWindow: number;
  utilisationToMakespan: number;
  makespanHours: number;
  idleEntitlement: { avgSlots: number; shareOfEntitled: number; lentShare: number; unusedShare: number };
  preemptions: number;
  lostWorkSlotHours: number;
  decisions: Record<string, number>;
  eta: Record<
    "all" | TenantClass,
    { jobs: number; medianAbsErrorS: number; p90AbsErrorS: number; medianSignedErrorS: number }
  >;
  wallSeconds: number;
}

function stats(ms: number[]): WaitStats {
  const s = Float64Array.from(ms).sort();
  const sec = (p: number) => round(percentileOfSorted(s, p) / 1000, 1);
  return { jobs: s.length, p50: sec(50), p95: sec(95), p99: sec(99) };
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function etaStats(errors: number[]): PolicySummary["eta"]["all"] {
  const abs = Float64Array.from(errors, Math.abs).sort();
  const signed = Float64Array.from(errors).sort();
  return {
    jobs: abs.length,
    medianAbsErrorS: round(percentileOfSorted(abs, 50) / 1000, 1),
    p90AbsErrorS: round(percentileOfSorted(abs, 90) / 1000, 1),
    medianSignedErrorS: round(percentileOfSorted(signed, 50) / 1000, 1),
  };
}

export function summarise(w: Workload, r: SimOutput): PolicySummary {
  const byClass = Object.fromEntries(WAIT_GROUPS.map((g) => [g, [] as number[]])) as Record<WaitGroup, number[]>;
  const etaByClass: Record<"all" | TenantClass, number[]> = { all: [], small: [], medium: [], large: [] };
  const byOrg: number[][] = w.orgs.map(() => []);
  const slowdownSum = new Float64Array(w.orgs.length);
  for (const job of w.jobs) {
    const wait = r.waitMs[job.index] ?? 0;
    const cls = w.orgs[job.org]?.cls ?? "small";
    byClass.all.push(wait);
    byClass[cls].push(wait);
    if (job.tier === "interactive") byClass.interactive.push(wait);
    if (job.tier === "interactive" && cls === "small") byClass["small interactive"].push(wait);
    if (job.tier === "background") byClass.background.push(wait);
    if (r.withinEntitlement[job.index]) {
      byClass[
        job.tier === "interactive" ? "within entitlement, interactive" : "within entitlement, scheduled+background"
      ].push(wait);
    }
    const etaError = r.etaErrorMs[job.index] ?? Number.NaN;
    if (!Number.isNaN(etaError)) {
      etaByClass.all.push(etaError);
      etaByClass[cls].push(etaError);
    }
    byOrg[job.org]?.push(wait);
    slowdownSum[job.org] = (slowdownSum[job.org] ?? 0) + (wait + job.durationMs) / job.durationMs;
  }
  const orgP95 = {} as PolicySummary["orgP95Seconds"];
  for (const cls of CLASSES) {
    const p95s = w.orgs
      .map((o, i) => (o.cls === cls ? percentileOfSorted(Float64Array.from(byOrg[i] ?? []).sort(), 95) : Number.NaN))
      .filter((x) => !Number.isNaN(x));
    const sorted = Float64Array.from(p95s).sort();
    orgP95[cls] = {
      median: round(percentileOfSorted(sorted, 50) / 1000, 1),
      worst: round((sorted[sorted.length - 1] ?? 0) / 1000, 1),
    };
  }
  const horizon = w.params.horizonMs;
  const entitled = w.orgs.reduce((a, o) => a + o.entitlement.slots, 0);
  const idle = r.window.idleEntitlementSlotMs;
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
  return {
    policy: r.policy,
    waitSeconds: Object.fromEntries(WAIT_GROUPS.map((g) => [g, stats(byClass[g])])) as Record<WaitGroup, WaitStats>,
    orgP95Seconds: orgP95,
    jainNormalisedService: round(mean(r.jainServiceSamples), 3),
    contendedSampleShare: round(r.jainServiceSamples.length / Math.max(1, r.samplesTotal), 3),
    jainOrgSlowdown: round(
      jainIndex(w.orgs.map((_, i) => (slowdownSum[i] ?? 0) / Math.max(1, byOrg[i]?.length ?? 1))),
      3,
    ),
    utilisationArrivalWindow: round(r.window.busySlotMs / (w.capacity * horizon), 3),
    utilisationToMakespan: round(r.busySlotMs / (w.capacity * r.makespanMs), 3),
    makespanHours: round(r.makespanMs / 3_600_000, 2),
    idleEntitlement: {
      avgSlots: round(idle / horizon, 1),
      shareOfEntitled: round(idle / horizon / entitled, 3),
      lentShare: round(idle > 0 ? r.window.lentSlotMs / idle : 0, 3),
      unusedShare: round(idle > 0 ? r.window.unusedEntitledSlotMs / idle : 0, 3),
    },
    preemptions: r.preemptions,
    lostWorkSlotHours: round(r.lostWorkMs / 3_600_000, 2),
    decisions: r.decisions,
    eta: {
      all: etaStats(etaByClass.all),
      small: etaStats(etaByClass.small),
      medium: etaStats(etaByClass.medium),
      large: etaStats(etaByClass.large),
    },
    wallSeconds: round(r.wallMs / 1000, 1),
  };
}

/** One markdown table, one column per policy. */
export function markdownTable(summaries: PolicySummary[]): string {
  const head = `| metric | ${summaries.map((s) => s.policy).join(" | ")} |\n| --- | ${summaries.map(() => "---:").join(" | ")} |`;
  const row = (label: string, f: (s: PolicySummary) => string | number) =>
    `| ${label} | ${summaries.map((s) => String(f(s))).join(" | ")} |`;
  const w = (s: WaitStats) => `${s.p50} / ${s.p95} / ${s.p99}`;
  const rows = [
    ...WAIT_GROUPS.map((c) =>
      row(`queue wait p50 / p95 / p99 (s), ${c} (${summaries[0]?.waitSeconds[c].jobs ?? 0} jobs)`, (s) =>
        w(s.waitSeconds[c]),
      ),
    ),
    ...CLASSES.map((c) =>
      row(
        `per-tenant p95 wait (s), ${c}: median org / worst org`,
        (s) => `${s.orgP95Seconds[c].median} / ${s.orgP95Seconds[c].worst}`,
      ),
    ),
    row("Jain, normalised service (mean over contended minutes)", (s) => s.jainNormalisedService),
    row("Jain, per-org mean slowdown", (s) => s.jainOrgSlowdown),
    row("utilisation, arrival window", (s) => s.utilisationArrivalWindow),
    row("utilisation, to makespan", (s) => s.utilisationToMakespan),
    row("makespan (h)", (s) => s.makespanHours),
    row(
      "idle entitlement, avg slots (share of entitled)",
      (s) => `${s.idleEntitlement.avgSlots} (${s.idleEntitlement.shareOfEntitled})`,
    ),
    row(
      "idle entitlement: lent to borrowers / unused (no demand)",
      (s) => `${s.idleEntitlement.lentShare} / ${s.idleEntitlement.unusedShare}`,
    ),
    row("preemptions (lost slot-hours)", (s) => `${s.preemptions} (${s.lostWorkSlotHours})`),
    ...(["all", ...CLASSES] as const).map((c) =>
      row(
        `ETA error, ${c}: abs p50 / abs p90 / signed p50 (s)`,
        (s) => `${s.eta[c].medianAbsErrorS} / ${s.eta[c].p90AbsErrorS} / ${s.eta[c].medianSignedErrorS}`,
      ),
    ),
    row("wall time (s)", (s) => s.wallSeconds),
  ];
  return [head, ...rows].join("\n");
}
