// The `process` SandboxDriver: sandboxes are directories under KILN_WORK_DIR, steps are host
// processes, hardened when `unshare` works (own namespaces, unprivileged uid, no capabilities, a
// private read-only root: private-view.ts, docs/adr/0019). Cheap to create, hence no warm pool; it
// shares the host's kernel, so a kernel bug is an escape: untrusted jobs belong on microvm. A root
// agent gives each sandbox its size's limits (ADR 0041): a cgroup (memory, processes, CPU) and a
// loop-mounted work disk holding workspace, home and tmp; what the host does not offer, the
// isolation detail says.
import { randomUUID } from "node:crypto";
import { access, mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { DEFAULT_RUNNER_SIZE, SIZE_RESOURCES, type RunnerSize, type SizeResources } from "@kiln/domain";
import { SAFE_SANDBOX_ID, type Sandbox, type SandboxDriver, type SandboxSpec } from "../sandbox-driver.ts";
import { WorkDisks } from "../work-disk.ts";
import { findForwarderTools, type ForwarderTools } from "./egress-forwarder.ts";
import { probeNamespaces, unavailable, type NamespaceSupport } from "./namespace-probe.ts";
import { EGRESS_SOCKET_IN_ROOT } from "./private-view.ts";
import { ProcessSandbox, type SizeLimits } from "./process-sandbox.ts";
import { probeCgroups, SandboxCgroup, type CgroupHost } from "./sandbox-cgroup.ts";
import { SandboxDisk, unmountUnder } from "./sandbox-disk.ts";
import { killProcessesUnder } from "./process-sweep.ts";
import { removeTree } from "./remove-tree.ts";

// Marks a directory as ours, so leftover cleanup never deletes something it did not create.
const MARKER_FILE = ".kiln-sandbox";

export interface ProcessDriverOptions {
  workDir: string;
  /** "auto" probes `unshare` once; "off" always runs plain processes (tests, debugging). */
  namespaces?: "auto" | "off";
  /**
   * When the probe finds no namespaces: false (the default) refuses to create the driver, because
   * steps would run as the agent's user on the host's network (issue 28: fail closed); true is an
   * operator's explicit development choice, and the host then registers isolation `none`.
   */
  allowUnisolated?: boolean;
  /** Per-size figures replacing the domain's (tests: a tiny disk fills in a second). */
  sizes?: Partial<Record<RunnerSize, SizeResources>>;
  /** "off": no cgroups and no work disks even where the host offers them (tests of the plain path). */
  sizeLimits?: "auto" | "off";
}

/** What the host offers for the size's limits, probed once (or why not, for the isolation detail). */
interface LimitSupport {
  cgroups: CgroupHost | { reason: string };
  disks: WorkDisks | { reason: string };
  sizes: Readonly<Record<RunnerSize, SizeResources>>;
}

async function probeLimits(workDir: string, opts: ProcessDriverOptions): Promise<LimitSupport> {
  const sizes = { ...SIZE_RESOURCES, ...opts.sizes };
  if (opts.sizeLimits === "off") {
    const reason = "size limits disabled by configuration";
    return { cgroups: { reason }, disks: { reason }, sizes };
  }
  const cgroups = await probeCgroups();
  if (process.getuid?.() !== 0) return { cgroups, disks: { reason: "the agent is not root (no loop mounts)" }, sizes };
  const disks = new WorkDisks(path.join(workDir, ".disks"), "/sbin/mkfs.ext4");
  // One real mount and unmount: a host without loop devices says so here, not in every job.
  const probeRoot = path.join(workDir, `.probe-disk-${process.pid}`);
  await mkdir(probeRoot, { mode: 0o700 });
  const dir = path.join(probeRoot, "workspace");
  await mkdir(dir);
  const probe = await SandboxDisk.mount(disks, probeRoot, 16, [dir]).catch((err: unknown) => err);
  if (probe instanceof SandboxDisk) await probe.unmount();
  await unmountUnder(probeRoot);
  await removeTree(probeRoot);
  if (probe instanceof SandboxDisk) return { cgroups, disks, sizes };
  return {
    cgroups,
    disks: { reason: `loop mount failed: ${probe instanceof Error ? probe.message : String(probe)}` },
    sizes,
  };
}

function describeSizeLimits(l: LimitSupport): string {
  const sizes = Object.entries(l.sizes)
    .map(([n, s]) => `${n} ${s.vcpus} CPU/${s.memoryMiB} MiB/${s.diskMiB} MiB disk/${s.maxProcesses} processes`)
    .join(", ");
  const cg =
    "reason" in l.cgroups
      ? `no per-sandbox cgroup (${l.cgroups.reason}): memory and CPU are bounded only by the rlimits above`
      : `per-sandbox cgroup v${l.cgroups.version} (memory, pids, cpu quota)`;
  const disk =
    l.disks instanceof WorkDisks
      ? "a loop-mounted sparse ext4 work disk holding workspace, home and tmp"
      : `no work disk (${l.disks.reason}): workspace writes are bounded per file by RLIMIT_FSIZE, not in total`;
  return `size limits: ${cg}; ${disk}; sizes ${sizes}`;
}

export async function createProcessDriver(opts: ProcessDriverOptions): Promise<ProcessDriver> {
  const workDir = path.resolve(opts.workDir);
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  let namespaces =
    opts.namespaces === "off" ? unavailable("namespaces disabled by configuration") : await probeNamespaces();
  const tools = await findForwarderTools();
  const limits = await probeLimits(workDir, opts);
  let driver = new ProcessDriver(workDir, namespaces, tools, limits);
  if (namespaces.available) {
    // A host whose unshare works but whose kernel refuses a layer of the view (a user namespace,
    // open_tree, pivot_root) cannot isolate either: the same decision as no namespaces at all.
    const problem = await driver.probeView().then(
      () => null,
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    if (problem) {
      namespaces = unavailable(problem);
      driver = new ProcessDriver(workDir, namespaces, tools, limits);
    }
  }
  if (!namespaces.available && opts.namespaces !== "off" && !opts.allowUnisolated)
    throw new Error(
      `the process driver cannot isolate steps on this host (${namespaces.reason}): steps would run as ` +
        "plain host processes. Fix the host (user namespaces, util-linux unshare and setpriv, perl), use " +
        "KILN_SANDBOX_DRIVER=microvm, or for a development pool only set KILN_ALLOW_UNISOLATED=true",
    );
  return driver;
}

export class ProcessDriver implements SandboxDriver {
  readonly kind = "process" as const;

  constructor(
    private readonly workDir: string,
    private readonly namespaces: NamespaceSupport,
    private readonly forwarder: ForwarderTools | { missing: string[] } | null = null,
    private readonly limits: LimitSupport | null = null,
  ) {}

  get isolation() {
    const iso = this.namespaces.isolation;
    return this.limits ? { ...iso, detail: `${iso.detail}; ${describeSizeLimits(this.limits)}` } : iso;
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    if (!SAFE_SANDBOX_ID.test(spec.attemptId)) throw new Error(`unsafe sandbox id ${JSON.stringify(spec.attemptId)}`);
    // Without namespaces there is no private root to build from the image: the step would run the
    // host's tools instead of the image's (issue 30). Refused; the attempt goes to another host.
    if (spec.rootfs && !this.namespaces.available)
      throw new Error(
        `this host runs steps without namespaces (${this.namespaces.reason}) and so cannot run them inside the job image`,
      );
    const root = path.join(this.workDir, spec.attemptId);
    // Not recursive: if this attempt's directory still exists, fail instead of sharing it. 0711: the
    // step's unprivileged uid must pass through to workspace/home/tmp (handed to it by the view),
    // never list or change the root (the marker and the egress socket's mountpoint live there).
    await mkdir(root, { mode: 0o711 });
    await writeFile(path.join(root, MARKER_FILE), "");
    // Mountpoint for the attempt's egress socket inside the step's private view (private-view.ts).
    await writeFile(path.join(root, EGRESS_SOCKET_IN_ROOT), "", { mode: 0o600 });
    const dirs = ["workspace", "home", "tmp"].map((d) => path.join(root, d));
    for (const dir of dirs) await mkdir(dir, { mode: 0o700 });
    const limits = await this.sizeLimits(spec, root, dirs);
    // The sandbox reports the driver's isolation, size limits included.
    const ns = { ...this.namespaces, isolation: this.isolation };
    const sandbox = new ProcessSandbox(spec.attemptId, root, ns, this.forwarder, limits, spec.rootfs?.dir ?? null);
    sandbox.prestart();
    return sandbox;
  }

  /** The attempt's cgroup and work disk, where the host offers them; undone if either fails. */
  private async sizeLimits(spec: SandboxSpec, root: string, dirs: string[]): Promise<SizeLimits> {
    const l = this.limits;
    const limits: SizeLimits = { cgroup: null, disk: null };
    if (!l) return limits;
    const size = l.sizes[spec.size ?? DEFAULT_RUNNER_SIZE];
    try {
      if (!("reason" in l.cgroups)) limits.cgroup = await SandboxCgroup.create(l.cgroups, spec.attemptId, size);
      if (l.disks instanceof WorkDisks) limits.disk = await SandboxDisk.mount(l.disks, root, size.diskMiB, dirs);
    } catch (err) {
      await limits.cgroup?.remove();
      await removeTree(root);
      throw err;
    }
    return limits;
  }

  /**
   * Runs one step through the whole hardened view once, at startup: a kernel or host that refuses
   * one of its layers (user namespaces, open_tree, mount_setattr, pivot_root) stops the agent here
   * with the view's own message, instead of failing every job, and never degrades silently.
   */
  async probeView(): Promise<void> {
    const sandbox = await this.create({ attemptId: `probe-${process.pid}-${randomUUID()}`, image: null });
    let err = "";
    try {
      const r = await sandbox.runStep(
        "true",
        { PATH: "/usr/bin:/bin" },
        {},
        () => undefined,
        (c) => (err += c.toString()),
      );
      if (r.exitCode !== 0)
        throw new Error(`the process sandbox's hardened view does not work on this host: ${err.trim() || r.exitCode}`);
    } finally {
      await sandbox.destroy();
    }
  }

  async removeLeftovers(): Promise<number> {
    let removed = 0;
    for (const entry of await readdir(this.workDir)) {
      const root = path.join(this.workDir, entry);
      const ours = await access(path.join(root, MARKER_FILE)).then(
        () => true,
        () => false,
      );
      if (!ours) continue;
      await killProcessesUnder(root);
      await unmountUnder(root);
      await removeTree(root);
      removed++;
    }
    return removed;
  }
}
