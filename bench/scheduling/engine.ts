// Discrete-event simulation of one pool. Every dispatch decision is the domain's PoolScheduler
// (the same code chooseNext wraps), fed arrivals, completions and preemptions as events.
import { PoolScheduler, planQueue, type DecisionReason, type DispatchPolicy } from "@kiln/domain/dispatch";
import { normalisedServiceJain, type OrgShareInput } from "./fairness.ts";
import { EventHeap } from "./min-heap.ts";
import type { Workload } from "./workload.ts";

export interface SimOutput {
  policy: DispatchPolicy;
  /** Per job: total time queued while dispatchable (ms), summed over attempts. */
  waitMs: Float64Array;
  preemptions: number;
  lostWorkMs: number;
  decisions: Record<string, number>;
  busySlotMs: number;
  /** Integrals over the arrival window [0, horizon]. */
  window: { busySlotMs: number; idleEntitlementSlotMs: number; lentSlotMs: number; unusedEntitledSlotMs: number };
  makespanMs: number;
  jainServiceSamples: number[];
  samplesTotal: number;
  /** Per job: actual start - first planned ETA (ms); NaN when no planQueue sample covered it. */
  etaErrorMs: Float64Array;
  /** Per job: 1 when, as it became dispatchable, its org's running + queued jobs were within its entitlement. */
  withinEntitlement: Uint8Array;
  wallMs: number;
}

const FAIRNESS_SAMPLE_MS = 60_000;

export function simulate(w: Workload, policy: DispatchPolicy, etaSamples: number): SimOutput {
  const wallStart = performance.now();
  const orgCaps = new Map(w.orgs.map((o) => [o.orgId, o.cap]));
  const sched = new PoolScheduler({
    policy,
    capacity: w.capacity,
    entitlements: w.orgs.map((o) => o.entitlement),
    orgCaps,
  });
  const n = w.jobs.length;
  const waitMs = new Float64Array(n);
  const queuedSince = new Float64Array(n);
  const attemptStart = new Float64Array(n);
  const attempt = new Int32Array(n);
  const predicted = new Float64Array(n).fill(Number.NaN);
  const runFinished = new Int32Array(w.runs.length);
  const runBumped = new Uint8Array(w.runs.length);
  const runIndex = new Map(w.runs.map((r, i) => [r.runId, i]));
  const jobRun = Int32Array.from(w.jobs, (j) => runIndex.get(`${w.orgs[j.org]?.orgId}-run${j.run}`) ?? -1);
  const running = new Int32Array(w.orgs.length);
  const eligible = new Int32Array(w.orgs.length);
  const slots = w.orgs.map((o) => o.entitlement.slots);
  const out: SimOutput = {
    policy,
    waitMs,
    preemptions: 0,
    lostWorkMs: 0,
    decisions: {},
    busySlotMs: 0,
    window: { busySlotMs: 0, idleEntitlementSlotMs: 0, lentSlotMs: 0, unusedEntitledSlotMs: 0 },
    makespanMs: 0,
    jainServiceSamples: [],
    samplesTotal: 0,
    etaErrorMs: new Float64Array(n).fill(Number.NaN),
    withinEntitlement: new Uint8Array(n),
    wallMs: 0,
  };
  let idleEntitlement = slots.reduce((a, b) => a + b, 0);
  let runningTotal = 0;
  const changeRunning = (o: number, delta: number): void => {
    const before = Math.max(0, (slots[o] ?? 0) - (running[o] ?? 0));
    running[o] = (running[o] ?? 0) + delta;
    idleEntitlement += Math.max(0, (slots[o] ?? 0) - (running[o] ?? 0)) - before;
    runningTotal += delta;
  };
  const becameDispatchable = (i: number, o: number): void => {
    // The ADR's SLO population: work inside the entitlement, whatever anyone else is doing.
    out.withinEntitlement[i] = (running[o] ?? 0) + (eligible[o] ?? 0) < (slots[o] ?? 0) ? 1 : 0;
    eligible[o] = (eligible[o] ?? 0) + 1;
  };
  const ends = new EventHeap();
  const jobIndexOf = (jobId: string): number => Number(jobId.slice(1));

  const dispatch = (t: number): void => {
    for (let d = sched.next(t); d.pick; d = sched.next(t)) {
      count(out.decisions, d.reason);
      for (const v of d.preempt) {
        const vi = jobIndexOf(v.jobId);
        sched.preempt(v.jobId);
        out.preemptions += 1;
        out.lostWorkMs += t - (attemptStart[vi] ?? t);
        attempt[vi] = (attempt[vi] ?? 0) + 1;
        queuedSince[vi] = t;
        changeRunning(w.jobs[vi]?.org ?? 0, -1);
        eligible[w.jobs[vi]?.org ?? 0]! += 1;
      }
      const i = jobIndexOf(d.pick.jobId);
      const job = w.jobs[i];
      if (!job) throw new Error(`unknown job ${d.pick.jobId}`);
      sched.start(d.pick.jobId, t);
      waitMs[i] = (waitMs[i] ?? 0) + t - (queuedSince[i] ?? t);
      attemptStart[i] = t;
      changeRunning(job.org, 1);
      eligible[job.org]! -= 1;
      // The claim transaction would refuse these; the simulator treats them as scheduler bugs.
      if (runningTotal > w.capacity) throw new Error(`capacity exceeded at ${t}`);
      if ((running[job.org] ?? 0) > (w.orgs[job.org]?.cap ?? 0))
        throw new Error(`hard cap exceeded for org ${job.org} at ${t}`);
      const p = predicted[i] ?? Number.NaN;
      if (!Number.isNaN(p)) {
        out.etaErrorMs[i] = t - p;
        predicted[i] = Number.NaN;
      }
      ends.push({ at: t + job.durationMs, job: i, attempt: attempt[i] ?? 0 });
    }
  };

  const complete = (i: number, t: number): void => {
    const job = w.jobs[i];
    if (!job) return;
    sched.finish(job.jobId);
    changeRunning(job.org, -1);
    const r = jobRun[i] ?? -1;
    const run = w.runs[r];
    if (!run) return;
    runFinished[r] = (runFinished[r] ?? 0) + 1;
    const progress = (runFinished[r] ?? 0) / run.jobs.length;
    if (!runBumped[r] && progress >= 0.8) {
      runBumped[r] = 1;
      for (const k of run.jobs) {
        const id = w.jobs[k]?.jobId ?? "";
        if (sched.isQueued(id)) sched.update(id, { runProgress: progress });
      }
    }
    if (run.finalJob !== null && !job.isFinal && runFinished[r] === run.jobs.length - 1) {
      const fin = run.finalJob;
      sched.update(w.jobs[fin]?.jobId ?? "", { predecessorsDone: true, runProgress: progress });
      queuedSince[fin] = t;
      becameDispatchable(fin, job.org);
    }
  };

  const etaEvery = etaSamples > 0 ? w.params.horizonMs / (etaSamples + 1) : Number.POSITIVE_INFINITY;
  let nextEta = etaEvery;
  let nextSample = 0;
  let ri = 0;
  let t = 0;
  const horizon = w.params.horizonMs;
  for (;;) {
    const nextArrival = w.runs[ri]?.arrivalMs ?? Number.POSITIVE_INFINITY;
    const nextEnd = ends.peek()?.at ?? Number.POSITIVE_INFINITY;
    const work = nextArrival !== Number.POSITIVE_INFINITY || nextEnd !== Number.POSITIVE_INFINITY;
    if (!work) break;
    const tNext = Math.min(nextArrival, nextEnd, nextSample, nextEta);
    integrate(out, t, tNext, horizon, runningTotal, idleEntitlement, w.capacity);
    t = tNext;
    if (t === nextSample) {
      sampleFairness(out, w, running, eligible);
      nextSample += FAIRNESS_SAMPLE_MS;
    }
    if (t === nextEta) {
      samplePlan(sched, w, policy, orgCaps, t, predicted, jobIndexOf);
      nextEta += etaEvery;
    }
    for (let e = ends.peek(); e && e.at <= t; e = ends.peek()) {
      ends.pop();
      if (e.attempt === attempt[e.job]) complete(e.job, t);
    }
    for (let run = w.runs[ri]; run && run.arrivalMs <= t; run = w.runs[++ri]) {
      for (const k of run.jobs) {
        const job = w.jobs[k];
        if (!job) continue;
        sched.enqueue({
          jobId: job.jobId,
          orgId: w.orgs[job.org]?.orgId ?? "",
          runId: run.runId,
          tier: job.tier,
          enqueuedAt: run.arrivalMs,
          runProgress: 0,
          predecessorsDone: !job.isFinal,
          notBefore: null,
        });
        queuedSince[k] = run.arrivalMs;
        if (!job.isFinal) becameDispatchable(k, job.org);
      }
    }
    dispatch(t);
    out.makespanMs = t;
  }
  out.wallMs = performance.now() - wallStart;
  return out;
}

function count(into: Record<string, number>, reason: DecisionReason): void {
  into[reason] = (into[reason] ?? 0) + 1;
}

function integrate(
  out: SimOutput,
  from: number,
  to: number,
  horizon: number,
  runningTotal: number,
  idleEnt: number,
  capacity: number,
): void {
  const dt = to - from;
  if (dt <= 0) return;
  out.busySlotMs += runningTotal * dt;
  const inWindow = Math.max(0, Math.min(to, horizon) - Math.min(from, horizon));
  if (inWindow <= 0) return;
  const unused = Math.min(idleEnt, capacity - runningTotal);
  out.window.busySlotMs += runningTotal * inWindow;
  out.window.idleEntitlementSlotMs += idleEnt * inWindow;
  out.window.unusedEntitledSlotMs += unused * inWindow;
  out.window.lentSlotMs += (idleEnt - unused) * inWindow;
}

function sampleFairness(out: SimOutput, w: Workload, running: Int32Array, eligible: Int32Array): void {
  out.samplesTotal += 1;
  const orgs: OrgShareInput[] = w.orgs.map((o, i) => ({
    running: running[i] ?? 0,
    demand: Math.min(o.cap, (running[i] ?? 0) + (eligible[i] ?? 0)),
    slots: o.entitlement.slots,
    weight: o.entitlement.weight,
  }));
  const j = normalisedServiceJain(orgs, w.capacity);
  if (j !== null) out.jainServiceSamples.push(j);
}

/** What a waiting engineer would be shown at time t: planQueue over the dispatcher's snapshot. */
function samplePlan(
  sched: PoolScheduler,
  w: Workload,
  policy: DispatchPolicy,
  orgCaps: Map<string, number>,
  t: number,
  predicted: Float64Array,
  jobIndexOf: (id: string) => number,
): void {
  const plan = planQueue(sched.snapshot(t), { policy, orgCaps, expectedDurationMs: () => w.meanDurationMs });
  for (const [jobId, est] of plan) {
    const i = jobIndexOf(jobId);
    if (Number.isFinite(est.etaMs) && Number.isNaN(predicted[i] ?? 0) && est.reason !== "waiting_for_predecessor")
      predicted[i] = est.etaMs;
  }
}
