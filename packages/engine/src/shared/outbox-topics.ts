import { z } from "zod";

// The outbox's one contract (ADR 0038): for every topic, its payload schema and how the relay
// delivers it. Producers (enqueueOutbox and the SQL statements that insert outbox rows themselves)
// take topic names from here, the relay is driven by this table, and each job's payload type is
// inferred from its topic's schema, so a topic is declared once.

/** run.freeze: freeze an accepted run (its workflow bytes, parsed, jobs created). */
const freezePayload = z.object({ runId: z.string().uuid() });
/**
 * job.dispatch: a job became READY in this generation. Only a hint (the claim's guarded update
 * decides), so ids are checked for shape, not version.
 */
const dispatchPayload = z.object({
  jobId: z.guid(),
  runId: z.guid(),
  orgId: z.guid(),
  pool: z.string().min(1),
  generation: z.number().int(),
});
/** forge.status: "run X changed"; the delivery reads the current state itself (ADR 0028). */
const forgeStatusPayload = z.object({ runId: z.string().uuid() });
/** attestation.create: a successful job bound artifacts; the attestor signs its provenance (issue 17). */
const attestPayload = z.object({
  jobId: z.uuid(),
  runId: z.uuid(),
  orgId: z.uuid(),
  epoch: z.number().int().min(1),
});
/** attestation.verify: a new attestation; the verifier re-checks it against the log and the bytes. */
const verifyAttestationPayload = z.object({ attestationId: z.uuid() });
/**
 * environment.pointer_moved (issue 18): the deployer starts the environment's deploy run for exactly
 * this generation. pointerSeq orders moves of one environment: a consumer that sees an older seq
 * than the environment's current one knows it was superseded.
 */
const environmentPointerMovedPayload = z.object({
  orgId: z.uuid(),
  repoId: z.uuid(),
  environmentId: z.uuid(),
  promotionId: z.uuid(),
  kind: z.enum(["promote", "rollback"]),
  generationId: z.uuid(),
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  attestationId: z.uuid().nullable(),
  pointerSeq: z.string().regex(/^[0-9]{1,19}$/),
});

/**
 * How the relay hands one topic's rows to pg-boss:
 * - `send`: one `boss.send` per row (with the singleton key, if any);
 * - `batch`: one `boss.insert` per queue per relay pass (hundreds of completions a second made one
 *   send per row the relay's bottleneck, issue 17);
 * - `dispatch-hint`: a NOTIFY on `kiln_dispatch` per pool; a queue row too only when the dispatch
 *   policy wants hints as queue jobs (FIFO, ADR 0009).
 */
type OutboxDelivery = "send" | "batch" | "dispatch-hint";

export interface OutboxTopicSpec<S extends z.ZodType = z.ZodType> {
  payload: S;
  // Method syntax on purpose: a spec of one topic is then usable where any spec is expected.
  /** The pg-boss queue the relay sends to. */
  queue(p: z.infer<S>): string;
  delivery: OutboxDelivery;
  /** dispatch-hint: the pool whose claimers the relay wakes (NOTIFY kiln_dispatch). */
  pool?(p: z.infer<S>): string;
  /** pg-boss singleton key: with a stately queue, at most one queued job per key. */
  singletonKey?(p: z.infer<S>): string;
  /** Options of each send (dispatch hints expire: a stale one is useless). */
  sendOptions?: { expireInSeconds: number; retentionSeconds: number };
  /**
   * The relay creates the queue if it is missing. Not for queues whose policy the worker must set
   * at creation (forge-status is stately): the relay would create it standard.
   */
  ensureQueue: boolean;
  /** Wake this process's worker of the queue after queueing, instead of waiting for its poll. */
  wakeWorker: boolean;
}

function topic<S extends z.ZodType>(spec: OutboxTopicSpec<S>): OutboxTopicSpec<S> {
  return spec;
}

export const OUTBOX_TOPICS = {
  "run.freeze": topic({
    payload: freezePayload,
    queue: () => "run-freeze",
    delivery: "send",
    ensureQueue: true,
    wakeWorker: true,
  }),
  "job.dispatch": topic({
    payload: dispatchPayload,
    queue: (p) => `dispatch-${p.pool}`,
    delivery: "dispatch-hint",
    pool: (p) => p.pool,
    sendOptions: { expireInSeconds: 300, retentionSeconds: 3600 },
    ensureQueue: true,
    wakeWorker: false,
  }),
  // One queued delivery per run (stately queue): a second send while one waits is dropped, and the
  // waiting one reads the run's latest state anyway.
  "forge.status": topic({
    payload: forgeStatusPayload,
    queue: () => "forge-status",
    delivery: "send",
    singletonKey: (p) => p.runId,
    ensureQueue: false,
    wakeWorker: false,
  }),
  // Idempotent consumers (one statement and one leaf per job), so a repeated relay pass is harmless.
  "attestation.create": topic({
    payload: attestPayload,
    queue: () => "attest-job",
    delivery: "batch",
    ensureQueue: true,
    wakeWorker: true,
  }),
  "attestation.verify": topic({
    payload: verifyAttestationPayload,
    queue: () => "verify-attestation",
    delivery: "batch",
    ensureQueue: true,
    wakeWorker: true,
  }),
  // A relay pass repeated after a crash may queue a second copy: the consumer compares pointerSeq
  // with the environment's current one (idempotent).
  "environment.pointer_moved": topic({
    payload: environmentPointerMovedPayload,
    queue: () => "environment-pointer-moved",
    delivery: "send",
    singletonKey: (p) => `${p.environmentId}:${p.pointerSeq}`,
    ensureQueue: true,
    wakeWorker: true,
  }),
} as const;

export type OutboxTopic = keyof typeof OUTBOX_TOPICS;
export type OutboxPayloadOf<T extends OutboxTopic> = z.infer<(typeof OUTBOX_TOPICS)[T]["payload"]>;
export type OutboxPayload = { [T in OutboxTopic]: OutboxPayloadOf<T> }[OutboxTopic];

export type DispatchPayload = OutboxPayloadOf<"job.dispatch">;
export type FreezePayload = OutboxPayloadOf<"run.freeze">;
export type ForgeStatusPayload = OutboxPayloadOf<"forge.status">;
export type AttestPayload = OutboxPayloadOf<"attestation.create">;
export type VerifyAttestationPayload = OutboxPayloadOf<"attestation.verify">;
export type EnvironmentPointerMovedPayload = OutboxPayloadOf<"environment.pointer_moved">;

export function isOutboxTopic(t: string): t is OutboxTopic {
  return Object.hasOwn(OUTBOX_TOPICS, t);
}

/** A topic and payload checked against the registry: unknown topic or bad payload -> error. */
export type ParsedOutboxMessage = { [T in OutboxTopic]: { topic: T; payload: OutboxPayloadOf<T> } }[OutboxTopic];

export class OutboxContractError extends Error {
  readonly code = "OUTBOX.CONTRACT";
}

export function parseOutboxMessage(topic: string, payload: unknown): ParsedOutboxMessage {
  if (!isOutboxTopic(topic)) throw new OutboxContractError(`unknown outbox topic ${JSON.stringify(topic)}`);
  const r = OUTBOX_TOPICS[topic].payload.safeParse(payload);
  if (!r.success) throw new OutboxContractError(`outbox payload of ${topic} does not parse: ${r.error.message}`);
  return { topic, payload: r.data } as ParsedOutboxMessage;
}
