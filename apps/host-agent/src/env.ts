// The agent's whole configuration, parsed once at boot (conventions rule 11). This is the only
// file that may read process.env; everything else receives the parsed `AgentEnv`.
import os from "node:os";
import path from "node:path";
import { DEFAULT_RUNNER_SIZE, isRunnerSize, MAX_RUNNER_LABELS, RUNNER_LABEL_PATTERN } from "@kiln/domain";
import { parseRegistryConfig } from "@kiln/oci";
import { z } from "zod";

/** Unset and empty mean the same thing: use the default. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === "" ? undefined : v), schema);

const intVar = (min: number, max: number, fallback: number) =>
  optional(z.coerce.number().int().min(min).max(max).default(fallback));

/** A comma-separated list, each entry matching `pattern`, deduplicated and sorted. */
function listVar(v: string, ctx: z.RefinementCtx, pattern: RegExp): string[] {
  const items = [
    ...new Set(
      v
        .split(",")
        .map((x) => x.trim())
        .filter((x) => x !== ""),
    ),
  ].sort();
  for (const x of items)
    if (!pattern.test(x)) ctx.addIssue({ code: "custom", message: `invalid entry ${JSON.stringify(x)}` });
  if (items.length > MAX_RUNNER_LABELS)
    ctx.addIssue({ code: "custom", message: `at most ${MAX_RUNNER_LABELS} entries` });
  return items;
}

export function parseEnv(source: Record<string, string | undefined>, pid = process.pid) {
  const schema = z.object({
    // Base URL of the control plane's agent API. Default: a control plane on this machine.
    KILN_CONTROL_URL: optional(z.url().default("http://127.0.0.1:3000")),
    // Host credential (Bearer) for /v1/agent/sessions and /v1/agent/claims. Required, no default:
    // the control plane maps it to a pool. Never logged and never passed to a step.
    // Required unless KILN_AGENT_STATE_DIR holds a registered credential (issue 22).
    KILN_AGENT_TOKEN: optional(z.string().min(1).optional()),
    // Issue 22: the state directory `npm run agent -- register` wrote the host credential to (0600);
    // with it the agent runs from that credential, which never passes through an environment variable.
    KILN_AGENT_STATE_DIR: optional(z.string().min(1).optional()),
    // Which SandboxDriver runs jobs: `process` (host processes + namespaces when available) or
    // `microvm` (QEMU microvm per job, docs/adr/0011-microvm-sandboxes.md). Default: process.
    KILN_SANDBOX_DRIVER: optional(z.enum(["process", "microvm"]).default("process")),
    // Pool name, informational only (logged): the control plane derives the pool from the token.
    KILN_POOL: optional(z.string().min(1).default("default")),
    // Runner selection (issue 20, docs/adr/0031): labels this host offers jobs' runs_on.labels,
    // comma-separated (e.g. "gpu,cuda12"; a-z 0-9 . _ -). Default: none (jobs asking for labels skip it).
    KILN_AGENT_LABELS: optional(z.string().default("")).transform((v, ctx) => listVar(v, ctx, RUNNER_LABEL_PATTERN)),
    // Sizes this host serves (small, medium, large), comma-separated; each gets its own warm pool.
    // A job gets its size's vCPUs, memory, process limit and work disk (ADR 0041; the process driver
    // where the host offers cgroups and loop devices, as its isolation detail says). Default: small.
    KILN_AGENT_SIZES: optional(z.string().default(DEFAULT_RUNNER_SIZE)).transform((v, ctx) =>
      listVar(v, ctx, /^(small|medium|large)$/).filter(isRunnerSize),
    ),
    // Jobs this agent runs at once; one claim loop per slot. Default 2.
    KILN_AGENT_SLOTS: intVar(1, 64, 2),
    // How often the agent reports its fleet stats (version, warm pool, slots) and reads an operator's
    // reclaim notice (issue 22), ms. Default 10 s: the fleet view's figures are at most that old.
    KILN_AGENT_STATS_MS: intVar(200, 600_000, 10_000),
    // Pre-booted sandboxes kept ready. The process driver has nothing to pre-boot (a sandbox is a
    // directory), so the default is 0 and other values are ignored with a log line.
    KILN_WARM_POOL_SIZE: intVar(0, 64, 0),
    // microvm driver: cache of guest kernel, initramfs, base rootfs, pool snapshot and per-digest
    // rootfs images, shared by the agents of one host. Default: <KILN_WORK_DIR>/../microvm-assets.
    KILN_MICROVM_ASSETS: optional(z.string().min(1).optional()),
    // microvm driver: `auto` boot-probes KVM and falls back to TCG; `kvm`/`tcg` force one. Default auto.
    KILN_MICROVM_ACCEL: optional(z.enum(["auto", "kvm", "tcg"]).default("auto")),
    // Where sandboxes live (<dir>/<attemptId>/{workspace,home,tmp}). Default is per process so two
    // agents on one host never share it: ./.kiln-data/agent-<pid>.
    KILN_WORK_DIR: optional(z.string().min(1).default(`./.kiln-data/agent-${pid}`)),
    // Name this agent registers under. Default: <os hostname>-<pid>.
    // Port of this agent's Prometheus /metrics (docs/adr/0043). Unset (the default): not served,
    // since several agents may share a host. Unauthenticated, so it binds KILN_METRICS_HOST.
    KILN_METRICS_PORT: optional(z.coerce.number().int().min(1).max(65_535).optional()),
    // Address the metrics port binds. Default 127.0.0.1: sandboxes have no route to the host's loopback.
    KILN_METRICS_HOST: optional(z.string().min(1).default("127.0.0.1")),
    KILN_HOSTNAME: optional(z.string().min(1).max(200).default(`${os.hostname()}-${pid}`)),
    // How long one claim request long-polls for work (the protocol caps it at 30 s). Default 20 s.
    KILN_CLAIM_WAIT_MS: intVar(0, 30_000, 20_000),
    // Between SIGTERM and SIGKILL when a job is cancelled or times out. Default 5 s.
    KILN_CANCEL_GRACE_MS: intVar(0, 300_000, 5_000),
    // Logs (docs/adr/0006-logs.md). A chunk is cut at KILN_LOG_FLUSH_BYTES or KILN_LOG_FLUSH_MS
    // after its first byte, whichever comes first. Defaults: 64 KiB, 200 ms.
    KILN_LOG_FLUSH_BYTES: intVar(256, 1024 * 1024, 64 * 1024),
    KILN_LOG_FLUSH_MS: intVar(10, 60_000, 200),
    // Output kept per attempt (stdout + stderr); past it output is drained, counted and dropped,
    // and the log ends "truncated". Must not exceed the control plane's KILN_LOG_MAX_BYTES. 64 MiB.
    KILN_LOG_MAX_BYTES: intVar(1024, 2 ** 40, 64 * 1024 * 1024),
    // Shipping rate limit per attempt, bytes/s; faster output waits in the spool. Default 16 MiB/s.
    KILN_LOG_RATE_BYTES: intVar(1024, 2 ** 40, 16 * 1024 * 1024),
    // Unacknowledged output kept in memory per attempt; the rest is read back from the disk spool
    // (<KILN_WORK_DIR>/.log-spool/<attempt>). Default 4 MiB.
    KILN_LOG_MEMORY_BYTES: intVar(0, 2 ** 40, 4 * 1024 * 1024),
    // After the last step: how long to keep trying to ship and seal before reporting anyway (the
    // log is then marked gapped). Default 60 s.
    KILN_LOG_DRAIN_MS: intVar(0, 3_600_000, 60_000),
    // Mediated egress (docs/adr/0013-mediated-egress.md): `on` gives every sandbox exactly one way
    // out, this host's proxy, judged by the ticket's policy; `off` gives it none. Default on.
    KILN_EGRESS: optional(z.enum(["on", "off"]).default("on")),
    // Let allowed names resolve to loopback/private/link-local addresses (on-premises mirrors,
    // local development). Default false: DNS cannot turn an allowed name into the host's services.
    KILN_EGRESS_ALLOW_INTERNAL: optional(z.enum(["true", "false"]).default("false")),
    // Issue 28: a process host where user namespaces (or setpriv, or perl) are unavailable would run
    // steps as the agent's own user on the host's network. The agent refuses to start there unless
    // this is "true", and then registers isolation `none`, which placement admits only in a
    // development pool, for trusted work. Default false: fail closed.
    KILN_ALLOW_UNISOLATED: optional(z.enum(["true", "false"]).default("false")),
    // Local repositories (docs/adr/0017): an absolute directory file:// clone URLs may point under;
    // setting it also admits clone URLs on loopback (the test git server). Unset (the default): only
    // https:// clone URLs to public addresses. `npm run up` sets it for its demo repository.
    KILN_LOCAL_REPOS_ROOT: optional(z.string().startsWith("/").optional()),
    // Images (docs/adr/0012-images-by-digest.md). Registries as JSON keyed by host[:port], e.g.
    // {"registry.example.com":{"username":"ci","password":"..."}}: used to pull pinned images;
    // unlisted registries are refused (docs/adr/0017); plain http only for 127.0.0.1/localhost.
    KILN_REGISTRIES: optional(z.string().optional()).transform((v, ctx) => {
      try {
        return parseRegistryConfig(v);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: err instanceof Error ? err.message : String(err) });
        return z.NEVER;
      }
    }),
    // Byte budget of the node-local image cache (<KILN_WORK_DIR>/.images: layer blobs + unpacked
    // rootfs dirs); least recently used entries no attempt holds are evicted past it. 10 GiB.
    KILN_IMAGE_CACHE_BYTES: intVar(1024 * 1024, 2 ** 50, 10 * 1024 ** 3),
    // Most bytes / entries one image may unpack to (a decompression bomb fails as image.too_large).
    KILN_IMAGE_MAX_BYTES: intVar(1024, 2 ** 50, 8 * 1024 ** 3),
    KILN_IMAGE_MAX_ENTRIES: intVar(10, 100_000_000, 1_000_000),
    // Build caches (docs/adr/0014-build-caches.md). Byte budget of the node-local tier
    // (<KILN_WORK_DIR>/.caches: verified archives by digest, least recently used out first). 10 GiB.
    KILN_CACHE_LOCAL_BYTES: intVar(0, 2 ** 50, 10 * 1024 ** 3),
    // Most bytes / entries one cache may unpack to or pack from (decompression-bomb guard). 10 GiB.
    KILN_CACHE_MAX_BYTES: intVar(1024, 2 ** 50, 10 * 1024 ** 3),
    KILN_CACHE_MAX_ENTRIES: intVar(10, 100_000_000, 1_000_000),
    // A restore slower than this is abandoned and counts as a miss. 10 minutes.
    KILN_CACHE_RESTORE_TIMEOUT_MS: intVar(1_000, 3_600_000, 600_000),
  });
  const env = schema
    .refine((e) => e.KILN_AGENT_TOKEN !== undefined || e.KILN_AGENT_STATE_DIR !== undefined, {
      message:
        "KILN_AGENT_TOKEN is required (the host credential), or KILN_AGENT_STATE_DIR naming a registered agent's state directory",
      path: ["KILN_AGENT_TOKEN"],
    })
    .parse(source);
  const workDir = path.resolve(env.KILN_WORK_DIR);
  return {
    ...env,
    KILN_WORK_DIR: workDir,
    KILN_MICROVM_ASSETS: path.resolve(env.KILN_MICROVM_ASSETS ?? path.join(workDir, "..", "microvm-assets")),
    /** Whether KILN_CONTROL_URL was given: a registered agent otherwise uses the URL it registered with. */
    controlUrlGiven: (source.KILN_CONTROL_URL ?? "") !== "",
  };
}

export type AgentEnv = ReturnType<typeof parseEnv>;

/** Parses the real environment; throws a readable message listing every bad variable. */
export function loadEnv(): AgentEnv {
  try {
    return parseEnv(process.env);
  } catch (err) {
    if (err instanceof z.ZodError) {
      const lines = err.issues.map((i) => `  ${i.path.join(".") || "(env)"}: ${i.message}`);
      throw new Error(`invalid host-agent environment:\n${lines.join("\n")}`, { cause: err });
    }
    throw err;
  }
}

/** What `npm run agent -- register` reads from the environment: the state directory and the driver. */
export function registerEnv(): { stateDir: string | undefined; driver: "process" | "microvm" } {
  const dir = process.env.KILN_AGENT_STATE_DIR;
  return {
    stateDir: dir === undefined || dir === "" ? undefined : dir,
    driver: process.env.KILN_SANDBOX_DRIVER === "microvm" ? "microvm" : "process",
  };
}

/**
 * Test support for the sandbox contract: plants a variable in this process's own environment, to
 * prove a step never inherits the agent's. Lives here because no other file may touch process.env.
 * Returns the undo.
 */
export function plantAgentEnvVar(name: string, value: string): () => void {
  const before = process.env[name];
  process.env[name] = value;
  return () => {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  };
}
