// The `process` SandboxDriver: sandboxes are directories under KILN_WORK_DIR, steps are host
// processes, hardened when `unshare` works (own namespaces, unprivileged uid, no capabilities, a
// private read-only root: private-view.ts, docs/adr/0019). Cheap to create, hence no warm pool; it
// shares the host's kernel, so a kernel bug is an escape: untrusted jobs belong on microvm.
import { randomUUID } from "node:crypto";
import { access, mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { SAFE_SANDBOX_ID, type Sandbox, type SandboxDriver, type SandboxSpec } from "../sandbox-driver.ts";
import { findForwarderTools, type ForwarderTools } from "./egress-forwarder.ts";
import { probeNamespaces, unavailable, type NamespaceSupport } from "./namespace-probe.ts";
import { EGRESS_SOCKET_IN_ROOT } from "./private-view.ts";
import { ProcessSandbox } from "./process-sandbox.ts";
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
}

export async function createProcessDriver(opts: ProcessDriverOptions): Promise<ProcessDriver> {
  const workDir = path.resolve(opts.workDir);
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  let namespaces =
    opts.namespaces === "off" ? unavailable("namespaces disabled by configuration") : await probeNamespaces();
  const tools = await findForwarderTools();
  let driver = new ProcessDriver(workDir, namespaces, tools);
  if (namespaces.available) {
    // A host whose unshare works but whose kernel refuses a layer of the view (a user namespace,
    // open_tree, pivot_root) cannot isolate either: the same decision as no namespaces at all.
    const problem = await driver.probeView().then(
      () => null,
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    if (problem) {
      namespaces = unavailable(problem);
      driver = new ProcessDriver(workDir, namespaces, tools);
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
  ) {}

  get isolation() {
    return this.namespaces.isolation;
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
    const sandbox = new ProcessSandbox(spec.attemptId, root, this.namespaces, this.forwarder, spec.rootfs?.dir ?? null);
    for (const dir of Object.values(sandbox.paths)) await mkdir(dir, { mode: 0o700 });
    sandbox.prestart();
    return sandbox;
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
      await removeTree(root);
      removed++;
    }
    return removed;
  }
}
