// The `process` SandboxDriver: sandboxes are directories under KILN_WORK_DIR, steps are host
// processes (namespaced when `unshare` works). Cheap to create, hence no warm pool; isolation is
// much weaker than a microVM (see README), so it suits trusted jobs and development.
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
}

export async function createProcessDriver(opts: ProcessDriverOptions): Promise<ProcessDriver> {
  const workDir = path.resolve(opts.workDir);
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  const namespaces =
    opts.namespaces === "off" ? unavailable("namespaces disabled by configuration") : await probeNamespaces();
  return new ProcessDriver(workDir, namespaces, await findForwarderTools());
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
    const root = path.join(this.workDir, spec.attemptId);
    // Not recursive: if this attempt's directory still exists, fail instead of sharing it.
    await mkdir(root, { mode: 0o700 });
    await writeFile(path.join(root, MARKER_FILE), "");
    // Mountpoint for the attempt's egress socket inside the step's private view (private-view.ts).
    await writeFile(path.join(root, EGRESS_SOCKET_IN_ROOT), "", { mode: 0o600 });
    const sandbox = new ProcessSandbox(spec.attemptId, root, this.namespaces, this.forwarder);
    for (const dir of Object.values(sandbox.paths)) await mkdir(dir, { mode: 0o700 });
    sandbox.prestart();
    return sandbox;
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
