import { z } from "zod";
import { OUTCOMES } from "../runs/index.ts";
import { CACHE_RESTORE_RESULTS, CACHE_RESTORE_TIERS, CACHE_SAVE_RESULTS } from "../caches/index.ts";
import { LOG_STREAMS, MAX_LOG_CHUNK_BYTES } from "../logs/index.ts";
import { DEFAULT_RUNNER_SIZE, MAX_RUNNER_LABELS, RUNNER_LABEL_PATTERN, RUNNER_SIZES } from "../dispatch/index.ts";
import { AUDIENCE_PATTERN } from "../identity/index.ts";

// The agent <-> control-plane contract, shared by both sides (conventions rule 10). Paths:
//   POST /v1/agent/sessions               host credential  registerSessionRequest -> registerSessionResponse (201)
//   POST /v1/agent/claims                 host credential  claimRequest -> jobTicket (200) | 204 no work
//   POST /v1/agent/jobs/{job_id}/heartbeat job token       heartbeatRequest -> heartbeatResponse | 409 stale
//   POST /v1/agent/jobs/{job_id}/complete  job token       completeRequest -> completeResponse | 409 refused
// Errors are {error: {code, message}}; 409 ATTEMPT.STALE_EPOCH / ATTEMPT.LEASE_EXPIRED mean
// "destroy the sandbox now, publish nothing".

/**
 * A ticket's `job.image` (with no digest) when the job's pool declared the host as its image on
 * purpose (issue 30): the process driver then runs the step against the host's read-only system
 * directories instead of an image's rootfs. Never a user's choice: the freeze sets it only from the
 * pool's configured default, and a job's own `image: host` is resolved as an image reference.
 */
export const HOST_IMAGE = "host";

export const registerSessionRequest = z
  .object({
    hostname: z.string().min(1).max(200),
    capacity: z.number().int().min(1).max(1024),
    labels: z
      .object({
        os: z.string().max(50),
        arch: z.string().max(50),
        resource_class: z.string().max(50),
        /** `none`: a process host without namespaces, admitted in development pools only (issue 28). */
        isolation: z.enum(["microvm", "process", "none"]),
      })
      .strict(),
    /**
     * Runner selection (issue 20): the labels this host offers jobs' `runs_on.labels` and the sizes
     * it serves. Absent (agents from before sizes): no labels, small only.
     */
    runner_labels: z.array(z.string().regex(RUNNER_LABEL_PATTERN)).max(MAX_RUNNER_LABELS).default([]),
    sizes: z.array(z.enum(RUNNER_SIZES)).min(1).max(RUNNER_SIZES.length).default([DEFAULT_RUNNER_SIZE]),
    /** Issue 22: the agent's protocol version (absent: 1) and its build, shown in the fleet view. */
    protocol_version: z.number().int().min(0).max(1_000_000).optional(),
    agent_version: z.string().min(1).max(100).optional(),
  })
  .strict();
export const registerSessionResponse = z.object({
  session_id: z.string(),
  pool: z.string(),
  lease_ttl_ms: z.number(),
  heartbeat_ms: z.number(),
  /** Issue 22: the host record this session belongs to and the control plane's protocol version. */
  runner_id: z.string().optional(),
  protocol_version: z.number().optional(),
  /**
   * Issue 30: the registries (and mirrors) this installation pulls images from, in KILN_REGISTRIES's
   * format (keyed by host[:port]; the agent validates each entry with @kiln/oci's schema). Absent
   * (an older control plane): the agent's own KILN_REGISTRIES only.
   */
  registries: z.record(z.string().min(1).max(300), z.record(z.string(), z.unknown())).optional(),
});

// Registration (issue 22): POST /v1/agent/registrations with a registration token as Bearer
// exchanges it (spent atomically) for a host credential bound to the token's org and pool.
export const registrationRequest = z
  .object({
    /** The pool the token was made for: `<org>/<name>` or just `<name>`. */
    pool: z.string().min(1).max(102),
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/),
    labels: z.array(z.string().regex(RUNNER_LABEL_PATTERN)).max(MAX_RUNNER_LABELS).default([]),
    isolation: z.enum(["microvm", "process"]).optional(),
    protocol_version: z.number().int().min(0).max(1_000_000),
    agent_version: z.string().min(1).max(100).optional(),
  })
  .strict();
export const registrationResponse = z
  .object({
    runner_id: z.string(),
    /** The host credential (kagent_...): returned once, stored 0600 in the agent's state directory. */
    credential: z.string(),
    org: z.string(),
    pool: z.string(),
    name: z.string(),
    labels: z.array(z.string()),
    protocol_version: z.number(),
  })
  .strict();

export const claimRequest = z
  .object({
    session_id: z.string().uuid(),
    claim_request_id: z.string().min(8).max(100),
    wait_ms: z.number().int().min(0).max(30_000).default(0),
  })
  .strict();

// Mediated egress (issue 3): what the attempt may reach, computed at claim (see the egress section below).
export const egressPolicy = z.object({
  trustClass: z.enum(["trusted", "untrusted"]),
  /** The org's allow-list (canonical patterns); the domain's decideEgress ignores it for untrusted runs. */
  allowList: z.array(z.string().max(300)).max(1000),
});
export const jobTicket = z.object({
  runId: z.string(),
  jobId: z.string(),
  attemptId: z.string(),
  orgId: z.string(),
  epoch: z.number().int(),
  jobToken: z.string(),
  leaseExpiresAt: z.string(),
  leaseTtlMs: z.number(),
  heartbeatMs: z.number(),
  trustClass: z.enum(["trusted", "untrusted"]),
  /** Mediated egress (issue 3): the attempt's policy, fixed at claim. Absent = nothing is reachable. */
  egress: egressPolicy.optional(),
  source: z.object({ cloneUrl: z.string(), commitSha: z.string() }),
  job: z.object({
    name: z.string(),
    index: z.number().int(),
    image: z.string().nullable(),
    /** Manifest digest pinned at freeze time (ADR 0012); absent from control planes before it. */
    imageDigest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .nullable()
      .optional(),
    steps: z.array(z.string()),
    env: z.record(z.string(), z.string()),
    timeoutMinutes: z.number(),
    /** runs_on.size (issue 20): a microVM host gives the job SIZE_RESOURCES[size]. Absent: small. */
    size: z.enum(RUNNER_SIZES).optional(),
    artifacts: z.object({
      publish: z.array(z.object({ name: z.string(), path: z.string() })),
      restore: z.array(z.object({ fromJob: z.string(), name: z.string(), path: z.string() })),
    }),
    /** Build cache block (issue 8); absent from control planes before it. */
    cache: z
      .object({
        kind: z.enum(["dependencies", "directory"]),
        version: z.string(),
        inputs: z.array(z.string()),
        paths: z.array(z.string()),
      })
      .nullable()
      .optional(),
    /** Declared secret names (issue 16): the agent asks the broker only when there are some. */
    secrets: z.array(z.string()).optional(),
    secretsRequired: z.boolean().optional(),
  }),
});
export type JobTicketWire = z.infer<typeof jobTicket>;

export const heartbeatRequest = z
  .object({
    epoch: z.number().int().min(1),
    phase: z
      .object({
        image_ms: z.number().int().min(0).optional(),
        dispatch_ms: z.number().int().min(0).optional(),
        started: z.boolean().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export const heartbeatResponse = z.object({ lease_expires_at: z.string(), cancel_requested: z.boolean() });

export const completeRequest = z
  .object({
    epoch: z.number().int().min(1),
    outcome: z.enum(OUTCOMES),
    cause: z.string().max(200).nullable().optional(),
    message: z.string().max(4000).nullable().optional(),
    exit_code: z.number().int().nullable().optional(),
    sandbox_destroyed: z.boolean(),
    phases: z
      .object({
        image_ms: z.number().int().min(0).optional(),
        dispatch_ms: z.number().int().min(0).optional(),
        execution_ms: z.number().int().min(0).optional(),
        finalize_ms: z.number().int().min(0).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export const completeResponse = z.object({ accepted: z.boolean(), job_outcome: z.string() });

export const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

// ---- Artifacts (issue 5, docs/adr/0007-artifacts.md). All with the job token; bytes never pass
// through these routes: the agent PUTs parts to presigned URLs and GETs downloads from one.
//   POST /v1/agent/jobs/{job_id}/artifacts/uploads                    artifactOpenRequest -> artifactUploadSession
//   POST /v1/agent/jobs/{job_id}/artifacts/uploads/{gen_id}/parts     artifactPartRequest -> artifactPartResponse
//   POST /v1/agent/jobs/{job_id}/artifacts/uploads/{gen_id}/complete  artifactCompleteRequest -> artifactCompleteResponse
//   POST /v1/agent/jobs/{job_id}/artifacts/downloads                  artifactDownloadRequest -> artifactDownloadGrant
// 409 ATTEMPT.STALE_EPOCH / ATTEMPT.LEASE_EXPIRED / RUN.CANCELLED: fenced, stop uploading.
const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
export const ARTIFACT_SEAL_SCHEME = "kiln-shred-v1";
const artifactName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.-]+$/);

export const artifactOpenRequest = z
  .object({
    epoch: z.number().int().min(1),
    name: artifactName,
    size_bytes: z.number().int().min(0),
    sha256: sha256Hex,
    format: z.enum(["file", "tar"]),
    /** The agent can seal parts as it uploads them (issue 21, ADR 0037; protocol 3). An agent that
     * does not say so uploads plaintext, as before. */
    seal: z.literal(ARTIFACT_SEAL_SCHEME).optional(),
  })
  .strict();
/**
 * The data key an artifact is sealed (or opened) with, for the host agent only: it never enters the
 * sandbox, is held in memory for the one transfer and is never logged. The header of the object is
 * fixed by key id, chunk size and salt, so a resumed session seals exactly the same bytes.
 */
export const artifactSeal = z.object({
  scheme: z.literal(ARTIFACT_SEAL_SCHEME),
  key_id: z.string().uuid(),
  /** The 32-byte AES-256 data key, base64. */
  key: z.string().min(40).max(64),
  /** The object's 8-byte salt, base64. */
  salt: z.string().min(8).max(16),
  chunk_size: z.number().int().min(1),
  /** Bytes the store holds: the sealed object's size. */
  stored_size_bytes: z.number().int().min(0),
});
export const artifactUploadSession = z.object({
  generation_id: z.string(),
  state: z.enum(["uploading", "sealed"]),
  size_bytes: z.number().int(),
  sha256: z.string(),
  part_size: z.number().int(),
  part_count: z.number().int(),
  /** Every part of the plan; `url` is absent for parts already recorded (resume) or when sealed. */
  parts: z.array(
    z.object({
      part_number: z.number().int(),
      offset: z.number().int(),
      size: z.number().int(),
      /** Bytes to PUT for this part when the session is sealed (header, chunks and their tags). */
      sealed_size: z.number().int().optional(),
      done: z.boolean(),
      url: z.string().optional(),
    }),
  ),
  urls_expire_at: z.string().nullable(),
  /** Present when the parts must be sealed before they are PUT. */
  seal: artifactSeal.optional(),
});

export const artifactPartRequest = z
  .object({
    epoch: z.number().int().min(1),
    part_number: z.number().int().min(1).max(10_000),
    size_bytes: z.number().int().min(0),
    sha256: sha256Hex,
    etag: z.string().min(1).max(200),
    /** MD5 of the part's bytes as sent (hex). Lets the control plane check the store's multipart
     * ETag instead of reading the object back; without it the upload is read back. */
    md5: z
      .string()
      .regex(/^[0-9a-f]{32}$/, "md5 must be 32 lowercase hex digits")
      .optional(),
    /** How many PUTs this part took (1 = no retry); kept for the multipart-retry signal. */
    tries: z.number().int().min(1).max(1000).default(1),
  })
  .strict();
export const artifactPartResponse = z.object({ recorded: z.boolean(), retry: z.boolean() });

export const artifactCompleteRequest = z.object({ epoch: z.number().int().min(1) }).strict();
export const artifactCompleteResponse = z.object({
  state: z.literal("sealed"),
  generation_id: z.string(),
  size_bytes: z.number().int(),
  sha256: z.string(),
});

export const artifactDownloadRequest = z
  .object({ epoch: z.number().int().min(1), from_job: artifactName, name: artifactName })
  .strict();
export const artifactDownloadGrant = z.object({
  generation_id: z.string(),
  producer_epoch: z.number().int(),
  size_bytes: z.number().int(),
  sha256: z.string(),
  format: z.enum(["file", "tar"]),
  url: z.string(),
  url_expires_at: z.string(),
  /** Present when the stored object is sealed: open it while downloading, then verify sha256. */
  seal: artifactSeal.optional(),
});

// ---- Logs (issue 4, docs/adr/0006-logs.md). All with the job token of the current epoch.
//   POST /v1/agent/jobs/{job_id}/logs       a chunk batch -> logAppendResponse (200 after the chunks are durable)
//       Content-Type application/vnd.kiln.log-chunks: a binary frame (logs/log-frame.ts) whose JSON
//       header is logAppendHeader and whose payload is the chunks' bytes back to back (the agent's form:
//       no base64, no JSON parsing of megabytes); or application/json: logAppendRequest (base64 data).
//   POST /v1/agent/jobs/{job_id}/logs/seal  logSealRequest -> logSealResponse
// 409 LOG.CONFLICT: other bytes already hold that position; 409 LOG.OUT_OF_ORDER: resend from
// error.details.next_seq; 503 LOG.JOURNAL_FULL + Retry-After: back-pressure, keep spooling and retry;
// 409 ATTEMPT.STALE_EPOCH / ATTEMPT.LEASE_EXPIRED: fenced, stop shipping.
const logStream = z.enum(LOG_STREAMS);
const logBytes = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
export const logChunkIdentity = z
  .object({
    stream: logStream,
    seq: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    offset: logBytes,
    length: z.number().int().min(1).max(MAX_LOG_CHUNK_BYTES),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();
export const logAppendHeader = z
  .object({ epoch: z.number().int().min(1), chunks: z.array(logChunkIdentity).min(1).max(512) })
  .strict();
export const logChunk = logChunkIdentity.extend({
  /** The chunk's bytes, base64 (after secret masking). */
  data: z.string().max(Math.ceil(MAX_LOG_CHUNK_BYTES / 3) * 4 + 4),
});
export const logAppendRequest = z
  .object({ epoch: z.number().int().min(1), chunks: z.array(logChunk).min(1).max(512) })
  .strict();
export const logAppendResponse = z.object({
  /** Highest contiguous committed offset per stream. */
  committed: z.object({ stdout: z.number(), stderr: z.number() }),
  next_seq: z.number().int(),
  stored: z.number().int(),
  duplicates: z.number().int(),
});
export const logSealRequest = z
  .object({
    epoch: z.number().int().min(1),
    next_seq: z.number().int().min(0),
    bytes: z.object({ stdout: logBytes, stderr: logBytes }).strict(),
    /** Output read and discarded past the per-attempt limit (the truncation marker). */
    dropped_bytes: z.object({ stdout: logBytes, stderr: logBytes }).strict(),
  })
  .strict();
export const logSealResponse = z.object({ state: z.enum(["sealed", "truncated"]) });

// ---- Mediated egress (issue 3, docs/adr/0013-mediated-egress.md). With the job token.
//   POST /v1/agent/jobs/{job_id}/egress-events  egressEventsRequest -> egressEventsResponse
// 409 ATTEMPT.STALE_EPOCH: a superseded epoch's report is refused (its sandbox is being destroyed).
export const egressEvent = z
  .object({
    host: z.string().min(1).max(255),
    port: z.number().int().min(0).max(65535),
    decision: z.enum(["allowed", "denied"]),
    reason: z.string().min(1).max(100),
    /** Identical destinations folded together since the last report. */
    count: z.number().int().min(1).max(1_000_000),
    at: z.iso.datetime(),
  })
  .strict();
export const egressEventsRequest = z
  .object({
    epoch: z.number().int().min(1),
    /** Per attempt, from 0; a retried report carries the same seq and records nothing twice. */
    batch_seq: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    events: z.array(egressEvent).min(1).max(500),
  })
  .strict();
export const egressEventsResponse = z.object({ recorded: z.number().int() });

// ---- Build caches (issue 8, docs/adr/0014-build-caches.md). All with the job token of the current
// epoch (409 ATTEMPT.STALE_EPOCH otherwise); bytes go agent <-> object store through presigned URLs.
//   POST /v1/agent/jobs/{job_id}/caches/restore                cacheRestoreRequest -> cacheRestoreGrant
//   POST /v1/agent/jobs/{job_id}/caches/saves                  cacheSaveRequest -> cacheSaveSession
//        403 CACHE.WRITE_REFUSED for an untrusted run (the agent logs the reason, the job goes on)
//   POST /v1/agent/jobs/{job_id}/caches/saves/{entry}/complete cacheCompleteRequest -> cacheCompleteResponse
//   POST /v1/agent/jobs/{job_id}/caches/stats                  cacheStatsRequest -> {recorded: true}
// The control plane derives the key itself from the frozen job, the run's repo and trust class, the
// session's platform and these input digests (hashed by the agent from the pinned checkout before any step).
export const cacheInputDigest = z.object({ path: z.string().min(1).max(1024), sha256: sha256Hex.nullable() }).strict();
export const cacheRestoreRequest = z
  .object({ epoch: z.number().int().min(1), inputs: z.array(cacheInputDigest).max(256) })
  .strict();
export const cacheRestoreGrant = z.discriminatedUnion("hit", [
  z.object({ hit: z.literal(false), key: z.string() }),
  z.object({
    hit: z.literal(true),
    key: z.string(),
    entry_id: z.string(),
    /** False when a dependency cache fell back to the newest entry with the same prefix. */
    exact: z.boolean(),
    size_bytes: z.number().int(),
    sha256: sha256Hex,
    unpacked_bytes: z.number().int(),
    entry_count: z.number().int(),
    url: z.string(),
    url_expires_at: z.string(),
  }),
]);

export const cacheSaveRequest = z
  .object({
    epoch: z.number().int().min(1),
    inputs: z.array(cacheInputDigest).max(256),
    size_bytes: z.number().int().min(0),
    sha256: sha256Hex,
    unpacked_bytes: z.number().int().min(0),
    entry_count: z.number().int().min(0),
  })
  .strict();
export const cacheSaveSession = z.discriminatedUnion("state", [
  z.object({
    state: z.literal("upload"),
    entry_id: z.string(),
    key: z.string(),
    url: z.string(),
    url_expires_at: z.string(),
  }),
  /** The key is already bound: with these bytes (already_bound) or with others (conflict, recorded). */
  z.object({ state: z.enum(["already_bound", "conflict"]), key: z.string() }),
]);
export const cacheCompleteRequest = z.object({ epoch: z.number().int().min(1) }).strict();
export const cacheCompleteResponse = z.object({
  state: z.enum(["bound", "already_bound", "conflict"]),
  entry_id: z.string(),
  key: z.string(),
});

export const cacheStatsRequest = z
  .object({
    epoch: z.number().int().min(1),
    restore: z
      .object({
        result: z.enum(CACHE_RESTORE_RESULTS),
        tier: z.enum(CACHE_RESTORE_TIERS).nullable(),
        exact: z.boolean().nullable(),
        reason: z.string().max(200).nullable(),
        bytes: z.number().int().min(0),
        ms: z.number().int().min(0),
      })
      .strict()
      .optional(),
    save: z
      .object({
        result: z.enum(CACHE_SAVE_RESULTS),
        reason: z.string().max(200).nullable(),
        bytes: z.number().int().min(0),
        ms: z.number().int().min(0),
      })
      .strict()
      .optional(),
  })
  .strict();
export const cacheStatsResponse = z.object({ recorded: z.boolean() });

// ---- Secrets (issue 16, docs/adr/0025). With the job token, once, at job start:
//   POST /v1/agent/jobs/{job_id}/secrets   secretsRequest -> secretsResponse | 409 stale
// Every delivered value's audit record is committed before this answer is sent. `withheld` names
// why nothing was delivered (an untrusted run); `required` is the job's secrets_required.
export const secretsRequest = z.object({ epoch: z.number().int().min(1) }).strict();
export const secretsResponse = z.object({
  delivered: z.array(z.object({ name: z.string(), version: z.number().int(), value: z.string() })),
  withheld: z.object({ cause: z.string(), message: z.string() }).nullable(),
  missing: z.array(z.string()),
  required: z.boolean(),
});
export type SecretsResponseWire = z.infer<typeof secretsResponse>;
// Private checkouts (issue 28, docs/adr/0028 amended). With the job token, once, at job start:
//   POST /v1/agent/jobs/{job_id}/source-credential  sourceCredentialRequest -> sourceCredentialResponse | 409 stale
// The repo's forge credential for the agent's own git fetch, only for a current attempt and only
// for an http(s) clone URL on the forge's own host. `credential` null: fetch as before; `reason`
// says why there is none (shown only if the forge then refuses). Never logged, never in a step.
export const sourceCredentialRequest = z.object({ epoch: z.number().int().min(1) }).strict();
export const sourceCredentialResponse = z.object({
  credential: z
    .object({
      username: z.string().min(1).max(200),
      password: z.string().min(1).max(4096),
      /** Whose credential (the repo id): a host mirror filled with it serves that repo alone. */
      scope: z.string().min(1).max(200),
    })
    .nullable(),
  reason: z.string().max(500).nullable(),
});
export type SourceCredentialResponseWire = z.infer<typeof sourceCredentialResponse>;
// Workload identity (issue 16, docs/adr/0024): the agent asks for an ID token on a step's behalf.
//   POST /v1/agent/jobs/{job_id}/id-token  job token  idTokenRequest -> idTokenResponse | 409 not current
// The step reaches the agent, never this endpoint: the agent checks the attempt's request token first.
export const idTokenRequest = z
  .object({
    epoch: z.number().int().min(1),
    audience: z.string().regex(AUDIENCE_PATTERN, "audience must be 1-200 printable characters"),
  })
  .strict();
export const idTokenResponse = z.object({ value: z.string(), expires_at: z.string() });

// ---- Fleet stats and reclaim notices (issue 22, docs/adr/0035). With the host credential:
//   POST /v1/agent/sessions/{session_id}/stats  sessionStatsRequest -> sessionStatsResponse
// Sent right after the session starts and then every KILN_AGENT_STATS_MS, so the fleet view shows
// what the agent knows (its version, warm pool, slots) even while it runs nothing. The answer carries
// an operator's reclaim notice: the agent then stops as on SIGUSR2 (cause host.reclaimed).
export const sessionStatsRequest = z
  .object({
    agent_version: z.string().min(1).max(100),
    /** Pre-booted sandboxes (microVM driver); a process host has none and reports zeros. */
    warm_pool: z
      .object({
        size: z.number().int().min(0).max(1024),
        hits: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
        misses: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
      })
      .strict(),
    slots: z.object({ in_use: z.number().int().min(0).max(1024), total: z.number().int().min(1).max(1024) }).strict(),
    /** The agent's last word (a reclaim or shutdown, its jobs reported): the session ends now. */
    ending: z.boolean().optional(),
  })
  .strict();
export const sessionStatsResponse = z.object({ recorded: z.boolean(), reclaim_requested: z.boolean() });
