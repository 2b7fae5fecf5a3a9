import { z } from "zod";
import { DEFAULT_RUNNER_SIZE, MAX_RUNNER_LABELS, RUNNER_LABEL_PATTERN, RUNNER_SIZES } from "../dispatch/index.ts";

// Sessions and host registration: the host credential's calls that start an agent session.
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
