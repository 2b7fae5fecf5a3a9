// One SSE connection: replay from the durable store, then follow live messages, exactly once and
// in sequence order. Frames are plain SSE text (ASCII: JSON with base64 payloads).
import type { Db } from "@kiln/db";
import {
  DomainError,
  encodeLogCursor,
  isDomainError,
  isTerminalLogState,
  planLogStream,
  terminalLogEvent,
  type LogStreamPlan,
  type LogStream,
} from "@kiln/domain";
import { authorizeLogRead, type LogReadGrant } from "./authorize-log-read.ts";
import type { LogHub } from "./log-fanout.ts";
import { assertLogRetained, type LogHead, type LogHeadCache } from "./log-head.ts";
import type { LogArchiveReader, LogChunkRecord } from "./log-segments.ts";
import { LiveQueue } from "./live-queue.ts";
import { readLogChunks } from "./read-log-chunks.ts";
import type { SqlPool } from "../shared/sql-pool.ts";

export interface LogFollowerDeps {
  db: Db;
  pool: SqlPool;
  archive: LogArchiveReader;
  /** Null when live fan-out is unavailable: followers then poll only. */
  hub: LogHub | null;
  heads: LogHeadCache;
  /** How often an idle follower re-reads the log head (catches messages Redis lost). */
  pollMs: number;
  /** Comment frames keep proxies from closing an idle stream. */
  keepAliveMs: number;
}

export interface FollowRequest {
  orgId: string;
  grant: LogReadGrant;
  lastEventId: string | null;
  pinnedEpoch: number | null;
  /** The plan the route made (it answers 204 itself when the plan is "done"). */
  plan: Exclude<LogStreamPlan, { kind: "done" }>;
}

function dataFrame(epoch: number, seq: number, stream: LogStream, offset: number, base64: string): string {
  return `id: ${encodeLogCursor({ epoch, kind: "chunk", seq })}\ndata: {"stream":"${stream}","offset":${offset},"data":"${base64}"}\n\n`;
}

function eventFrame(event: string, data: unknown, id?: string): string {
  return `${id ? `id: ${id}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Refusals that mean the log will never be readable again, as opposed to an outage: retention
 * evicted it (LOG.EXPIRED) or its archive's data key is destroyed or due (SHRED.KEY_DESTROYED).
 */
function isLogGone(e: unknown): e is DomainError {
  return isDomainError(e) && (e.code === "LOG.EXPIRED" || e.code === "SHRED.KEY_DESTROYED");
}

/** What streaming an attempt begins with: its head, where to start, and the replay's first read. */
interface AttemptStart {
  head: LogHead;
  next: number;
  /** The cursor pointed past anything this log issued: replay it all, and say so. */
  cursorReset: boolean;
  first: LogChunkRecord[];
}

/**
 * Opens a follower. The replay's first read happens here, before the caller has answered, so a
 * log that can no longer be read (evicted, or its key destroyed; a reconnect from a cursor into
 * such a log alike) is the response's status (410 with the error body) instead of a 200 whose
 * stream is cut, which EventSource clients would reconnect to forever (ADR 0037).
 */
export async function openJobLog(
  deps: LogFollowerDeps,
  req: FollowRequest,
  signal: AbortSignal,
): Promise<AsyncGenerator<string, void>> {
  const start =
    req.plan.kind === "stream" ? await startAttempt(deps, req.grant.jobId, req.plan.epoch, req.plan.fromSeq) : null;
  return followJobLog(deps, req, signal, start);
}

export async function* followJobLog(
  deps: LogFollowerDeps,
  req: FollowRequest,
  signal: AbortSignal,
  /** The first read openJobLog made for req.plan (a "stream" plan), if it made one. */
  start: AttemptStart | null = null,
): AsyncGenerator<string, void> {
  // Reconnect quickly after a cut; the cursor makes it exact.
  yield "retry: 1000\n\n";
  let plan: LogStreamPlan = req.plan;
  if (req.plan.cursorRejected) {
    yield eventFrame("log.cursor_invalid", {
      last_event_id: req.lastEventId,
      replay: plan.kind === "stream" ? "full" : "when_the_job_starts",
    });
  }
  try {
    while (plan.kind === "wait") {
      plan = yield* waitForAttempt(deps, req, signal);
      if (signal.aborted) return;
    }
    // "done" while connected (the job finished during the wait): end; the reconnect gets 204.
    if (plan.kind === "stream")
      yield* streamAttempt(deps, req.grant.jobId, plan.epoch, plan.fromSeq, signal, plan === req.plan ? start : null);
  } catch (e) {
    if (isLogGone(e)) {
      // Not an outage: what is left can never be read. Say why and end, without a terminal event
      // (the log is not complete); a reconnect gets the same refusal as a 410 before streaming.
      yield eventFrame("error", { code: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) });
      return;
    }
    // The client reconnects with its last cursor, so this costs a retry, not a byte.
    yield eventFrame("log.error", { message: e instanceof Error ? e.message.slice(0, 300) : "internal error" });
    throw e;
  }
}

/** Queued job, or a retry pending after the newest attempt ended: keep the stream alive, re-plan. */
async function* waitForAttempt(
  deps: LogFollowerDeps,
  req: FollowRequest,
  signal: AbortSignal,
): AsyncGenerator<string, LogStreamPlan> {
  let lastFrame = Date.now();
  for (;;) {
    await sleep(deps.pollMs, signal);
    if (signal.aborted) return { kind: "done" };
    const grant = await authorizeLogRead(deps.db, { orgId: req.orgId, jobId: req.grant.jobId });
    const plan = planLogStream({
      lastEventId: req.lastEventId,
      pinnedEpoch: req.pinnedEpoch,
      epochs: grant.epochs,
      jobFinished: grant.jobFinished,
    });
    // A rejected cursor was announced once already; from here it simply means "from the start".
    if (plan.kind !== "wait") return plan.kind === "stream" ? { ...plan, cursorRejected: false } : plan;
    if (Date.now() - lastFrame >= deps.keepAliveMs) {
      yield ": keep-alive\n\n";
      lastFrame = Date.now();
    }
  }
}

async function* streamAttempt(
  deps: LogFollowerDeps,
  jobId: string,
  epoch: number,
  fromSeq: number,
  signal: AbortSignal,
  opened: AttemptStart | null,
): AsyncGenerator<string, void> {
  const inbox = new LiveQueue();
  // Subscribe before the first read so nothing committed in between is missed by both paths.
  const unsubscribe = deps.hub?.subscribe(jobId, (m) => {
    if (m.epoch === epoch) inbox.push(m);
  });
  try {
    const start = opened ?? (await startAttempt(deps, jobId, epoch, fromSeq));
    if (start.cursorReset) {
      // Not a cursor this log ever issued (e.g. from another deployment): say so, replay it all.
      yield eventFrame("log.cursor_invalid", {
        last_event_id: encodeLogCursor({ epoch, kind: "chunk", seq: fromSeq - 1 }),
        replay: "full",
      });
    }
    let next = start.next;
    if (next === 0) yield eventFrame("log.attempt", { epoch });
    for (const c of start.first) {
      yield dataFrame(epoch, c.seq, c.stream, c.offset, c.data.toString("base64"));
      next = c.seq + 1;
    }
    // A first read made before the subscription existed: what committed since is in a fresh head.
    let head = opened ? await mustHead(deps, jobId, epoch, true) : start.head;
    let lastFrame = Date.now();
    for (;;) {
      while (next < head.nextSeq) {
        const chunks = await readChunks(deps, jobId, head, next);
        if (chunks.length === 0) break;
        for (const c of chunks) {
          yield dataFrame(epoch, c.seq, c.stream, c.offset, c.data.toString("base64"));
          next = c.seq + 1;
        }
        lastFrame = Date.now();
        if (signal.aborted) return;
      }
      if (isTerminalLogState(head.state) && next >= head.nextSeq) {
        yield terminalFrame(head);
        return;
      }
      const item = await inbox.next(Math.min(deps.pollMs, deps.keepAliveMs), signal);
      if (signal.aborted) return;
      if (item === "overflow") {
        head = await mustHead(deps, jobId, epoch, true);
      } else if (item === "timeout") {
        head = await mustHead(deps, jobId, epoch, false);
        if (next >= head.nextSeq && Date.now() - lastFrame >= deps.keepAliveMs) {
          yield ": keep-alive\n\n";
          lastFrame = Date.now();
        }
      } else if (item.kind === "state") {
        head = await mustHead(deps, jobId, epoch, true);
      } else {
        let hole = false;
        for (const c of item.chunks) {
          if (c.seq < next) continue; // already sent (replay overlapped the live path)
          if (c.seq > next) {
            hole = true; // Redis lost something: the durable store fills it in
            break;
          }
          yield dataFrame(epoch, c.seq, c.stream, c.offset, c.data);
          next++;
          lastFrame = Date.now();
        }
        head = hole ? await mustHead(deps, jobId, epoch, true) : { ...head, nextSeq: Math.max(head.nextSeq, next) };
      }
    }
  } finally {
    unsubscribe?.();
  }
}

async function startAttempt(
  deps: LogFollowerDeps,
  jobId: string,
  epoch: number,
  fromSeq: number,
): Promise<AttemptStart> {
  const head = await mustHead(deps, jobId, epoch, true);
  assertLogRetained(head);
  const cursorReset = fromSeq > head.nextSeq;
  const next = cursorReset ? 0 : fromSeq;
  return { head, next, cursorReset, first: await readChunks(deps, jobId, head, next) };
}

/** One replay read; a failure is re-examined so a log that is gone says so (LOG.EXPIRED, SHRED.*). */
async function readChunks(
  deps: LogFollowerDeps,
  jobId: string,
  head: LogHead,
  from: number,
): Promise<LogChunkRecord[]> {
  if (from >= head.nextSeq) return [];
  try {
    return await readLogChunks(deps.pool, deps.archive, head.attemptId, from, { untilSeq: head.nextSeq });
  } catch (e) {
    if (isDomainError(e) && e.code === "SHRED.KEY_DESTROYED") {
      // The viewer tells people when: the earliest due instant of the keys this log was sealed under.
      const { rows } = await deps.pool.query<{ due_at: Date | null }>(
        "SELECT min(due_at) AS due_at FROM shred_object WHERE subject_id = $1::uuid AND kind = 'log'",
        [head.attemptId],
      );
      const dueAt = rows[0]?.due_at;
      throw dueAt ? new DomainError(e.code, e.message, { ...e.details, key_due_at: dueAt.toISOString() }) : e;
    }
    if (isLogGone(e)) throw e;
    // Retention commits expired_at first and deletes the segments after: a read racing that sweep
    // fails on a missing segment or object, which is the eviction, not an outage.
    const now = await deps.heads.get(jobId, head.epoch, true);
    if (now) assertLogRetained(now);
    throw e;
  }
}

async function mustHead(deps: LogFollowerDeps, jobId: string, epoch: number, fresh: boolean): Promise<LogHead> {
  const head = await deps.heads.get(jobId, epoch, fresh);
  if (!head) throw new Error(`attempt ${epoch} of job ${jobId} vanished`);
  return head;
}

function terminalFrame(head: LogHead): string {
  if (!isTerminalLogState(head.state)) throw new Error("log is still open");
  return eventFrame(
    terminalLogEvent(head.state),
    { epoch: head.epoch, state: head.state, next_seq: head.nextSeq, bytes: head.bytes, dropped_bytes: head.dropped },
    encodeLogCursor({ epoch: head.epoch, kind: "end" }),
  );
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
