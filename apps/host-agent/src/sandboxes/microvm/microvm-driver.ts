// The `microvm` SandboxDriver: every sandbox is a QEMU microvm that runs exactly one job and is then
// destroyed. It has its size's vCPUs, memory and work disk (ADR 0041). Warmth comes from a pool per
// size of VMs restored from a snapshot of the idle base guest at that size (never from reuse); a job
// with its own root filesystem, or a pool miss, cold-boots.
import { createHash } from "node:crypto";
import { mkdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { DEFAULT_RUNNER_SIZE, RUNNER_SIZES, type RunnerSize, type SizeResources } from "@kiln/domain";
import type { Logger } from "@kiln/logger";
import {
  SAFE_SANDBOX_ID,
  type Sandbox,
  type SandboxDriver,
  type SandboxIsolation,
  type SandboxSpec,
} from "../sandbox-driver.ts";
import { egressSocketFor } from "../../egress/index.ts";
import { chooseAccel, hostTscKhz } from "./accel-probe.ts";
import { installEgressRelay } from "./egress-relay.ts";
import { findTool } from "./host-tools.ts";
import { removeLeftoverVms } from "./leftover-sweep.ts";
import { ensureMicrovmAssets, type MicrovmAssets } from "./microvm-assets.ts";
import { MicrovmError } from "./microvm-errors.ts";
import { sizeTable, type SizeTable } from "./microvm-limits.ts";
import { MicrovmSandbox } from "./microvm-sandbox.ts";
import { NET_DEVICE, SANDBOX_VM, type Accel } from "./qemu-command.ts";
import { QEMU_HOST_ID_BASE, qemuJailed } from "./qemu-jail.ts";
import { RootfsCache } from "./rootfs-cache.ts";
import { coldBoot, newRunDir, restoreSnapshot, saveSnapshot, type BootConfig, type BootedVm } from "./vm-boot.ts";
import { WarmPool } from "./warm-pool.ts";
import { WorkDisks } from "../work-disk.ts";

const BOOT_TIMEOUT_MS = 60_000;
// Under TCG a guest's boot grows with its memory (the kernel initialises and, with init_on_free,
// zeroes every page: ~30 s per GiB measured here, ADR 0041); KVM boots any size in about a second.
const TCG_BOOT_MS_PER_MIB = 40;
const RESTORE_TIMEOUT_MS = 30_000;
const MOUNT_TIMEOUT_MS = 30_000;

export interface MicrovmDriverOptions {
  workDir: string;
  /** Content-addressed cache for kernel, initramfs, base rootfs, snapshots and per-digest rootfs images. */
  assetsDir: string;
  /** Never-used VMs kept ready per size in warmPoolSizes. */
  warmPoolSize: number;
  /** The sizes that get a warm pool (each costs a snapshot save at start); default: small only. */
  warmPoolSizes?: readonly RunnerSize[];
  /** Per-size figures replacing the domain's (tests: a tiny disk fills in a second). */
  sizes?: Partial<Record<RunnerSize, SizeResources>>;
  accel?: "auto" | Accel;
  logger: Logger;
}

export interface MicrovmStats {
  poolHits: number;
  poolMisses: number;
  poolReady: number;
  /** Last create() durations by path, ms (bounded). */
  coldStartMs: number[];
  warmStartMs: number[];
  /** Background snapshot restores that filled the pool (spawn -> guest answers PING), ms. */
  restoreMs: number[];
}

export async function createMicrovmDriver(opts: MicrovmDriverOptions): Promise<MicrovmDriver> {
  const workDir = path.resolve(opts.workDir);
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  // Longest socket path: <workDir>/vm-<12 hex>/migrate.sock; unix sockets allow 107 bytes.
  if (Buffer.byteLength(path.join(workDir, "vm-000000000000", "migrate.sock")) > 107) {
    throw new MicrovmError(
      "MICROVM.BAD_INPUT",
      `work dir ${workDir} is too long for unix socket paths (max ~80 bytes)`,
    );
  }
  const assets = await ensureMicrovmAssets(path.resolve(opts.assetsDir));
  const [qemuPath, mkfsPath, tscKhz, egressRelay] = await Promise.all([
    findTool("qemu"),
    findTool("mkfs"),
    hostTscKhz(),
    installEgressRelay(workDir),
  ]);
  const base = { qemuPath, tscKhz, vmlinuz: assets.vmlinuz, initramfs: assets.initramfs, egressRelay };
  const probeDisks = new WorkDisks(path.join(path.resolve(opts.assetsDir), "disks"), mkfsPath);
  const choice = await chooseAccel(opts.accel ?? "auto", { ...base, disks: probeDisks }, assets.baseRootfs, workDir);
  const disks = new WorkDisks(path.join(path.resolve(opts.assetsDir), "disks"), mkfsPath);
  const cfg: BootConfig = { ...base, disks, accel: choice.accel };
  const sizes = sizeTable(opts.sizes);
  const isolation: SandboxIsolation = {
    level: "microvm",
    detail: `QEMU microvm, ${choice.reason}, per size ${describeSizes(sizes)} (sparse ext4 work disk holding the workspace, /tmp, $HOME and the root's writable layer; steps in a guest cgroup with pids.max), network: user-net restrict=on with one guestfwd to the agent's egress proxy (in a network helper process), QEMU -sandbox ${SANDBOX_VM}${qemuJailed ? `, per-VM uid from ${QEMU_HOST_ID_BASE} in its own mount and network namespace with a private root` : ", as the agent's user (agent not root: no uid drop or private root)"}, single-use`,
  };
  const driver = new MicrovmDriver(
    workDir,
    assets,
    cfg,
    isolation,
    new RootfsCache(path.join(path.resolve(opts.assetsDir), "rootfs"), mkfsPath),
    sizes,
    opts.logger,
  );
  if (opts.warmPoolSize > 0)
    for (const size of opts.warmPoolSizes ?? [DEFAULT_RUNNER_SIZE]) await driver.startPool(opts.warmPoolSize, size);
  opts.logger.info("microvm driver ready", {
    accel: choice.accel,
    accel_reason: choice.reason,
    assets: assets.key,
    warm_pool_size: opts.warmPoolSize,
  });
  return driver;
}

export class MicrovmDriver implements SandboxDriver {
  readonly kind = "microvm" as const;
  /** One pool per warm size, each restoring its own snapshot (a snapshot keeps its memory size). */
  private readonly pools = new Map<RunnerSize, { pool: WarmPool; snapshot: string }>();
  /** Run dirs of VMs this driver owns right now (pooled or in use): never leftovers. */
  private readonly live = new Set<string>();
  private readonly counters = {
    hits: 0,
    misses: 0,
    cold: [] as number[],
    warm: [] as number[],
    restore: [] as number[],
  };
  /** What the accel probe chose (kvm or tcg). */
  readonly accel: Accel;

  constructor(
    private readonly workDir: string,
    private readonly assets: MicrovmAssets,
    private readonly cfg: BootConfig,
    readonly isolation: SandboxIsolation,
    private readonly rootfsCache: RootfsCache,
    private readonly sizes: SizeTable,
    private readonly log: Logger,
  ) {
    this.accel = cfg.accel;
  }

  get stats(): MicrovmStats {
    return {
      poolHits: this.counters.hits,
      poolMisses: this.counters.misses,
      poolReady: this.readyCount(),
      coldStartMs: [...this.counters.cold],
      warmStartMs: [...this.counters.warm],
      restoreMs: [...this.counters.restore],
    };
  }

  warmPoolStats(): { size: number; hits: number; misses: number } {
    return { size: this.readyCount(), hits: this.counters.hits, misses: this.counters.misses };
  }

  private readyCount(): number {
    return [...this.pools.values()].reduce((n, p) => n + p.pool.readyCount, 0);
  }

  /** Saves the idle-guest snapshot once per (assets, accel, QEMU build, size) and starts filling. */
  async startPool(count: number, runnerSize: RunnerSize): Promise<void> {
    const size = this.sizes[runnerSize];
    const qemu = await stat(this.cfg.qemuPath);
    // The device model is part of the snapshot: the network device's presence (not its backend,
    // which is given again at restore) must match between save and restore.
    const devices = NET_DEVICE.filter((a) => a.startsWith("virtio-net"));
    const key = createHash("sha256")
      .update(`${this.assets.key}\0${this.cfg.accel}\0${qemu.size}\0${qemu.mtimeMs}\0${devices.join(" ")}`)
      // The VM's QEMU has no user-mode network since issue 28 (its helper does): slirp's state is
      // no longer in the stream, so older snapshots do not load.
      .update("\0net-helper")
      // The machine's memory, vCPUs and work disk size are in the snapshot (ADR 0041).
      .update(`\0${size.vcpus}/${size.memoryMiB}/${size.diskMiB}`)
      .digest("hex")
      .slice(0, 16);
    const file = path.join(this.assets.dir, `idle-${key}.snap`);
    if (
      !(await stat(file).then(
        () => true,
        () => false,
      ))
    ) {
      const started = performance.now();
      await saveSnapshot(this.cfg, this.assets.baseRootfs, this.workDir, file, this.bootTimeout(size), size);
      this.log.info("warm pool: base snapshot saved", {
        snapshot: file,
        size: runnerSize,
        save_ms: Math.round(performance.now() - started),
      });
    }
    const pool = new WarmPool(count, () => this.restoreOne(file, size), this.log.child({ size: runnerSize }));
    this.pools.set(runnerSize, { pool, snapshot: file });
    pool.refill();
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    if (!SAFE_SANDBOX_ID.test(spec.attemptId))
      throw new MicrovmError("MICROVM.BAD_INPUT", `unsafe sandbox id ${JSON.stringify(spec.attemptId)}`);
    const started = performance.now();
    const ownRoot = spec.rootfs ? await this.rootfsCache.ensure(spec.rootfs.dir, spec.rootfs.digest) : null;
    // Only the base image is pre-booted, per warm size (a snapshot restores with the memory and
    // disk it was saved with): a job with its own root filesystem, or another size, cold-boots.
    const size = spec.size ?? DEFAULT_RUNNER_SIZE;
    const resources = this.sizes[size];
    const pool = this.pools.get(size)?.pool ?? null;
    const pooled = ownRoot ? null : (pool?.take() ?? null);
    let booted: BootedVm;
    if (pooled) {
      booted = pooled;
      this.counters.hits++;
    } else {
      if (this.pools.size > 0 || ownRoot) this.counters.misses++;
      booted = await this.bootCold(ownRoot ?? this.assets.baseRootfs, resources);
    }
    await this.mountWorkDisk(booted, resources);
    const hostWorkspaceDir = path.join(booted.runDir, "workspace");
    await mkdir(hostWorkspaceDir, { mode: 0o700 });
    // The attempt's listener is open before create() (attempt-run.ts); without one the VM keeps a
    // network device that leads nowhere (its egress socket closes every connection).
    const egress = egressSocketFor(spec.attemptId);
    if (egress) booted.vm.egress.link(egress.path);
    const ms = performance.now() - started;
    remember(pooled ? this.counters.warm : this.counters.cold, ms);
    this.log.info("microvm sandbox created", {
      attempt_id: spec.attemptId,
      run_dir: booted.runDir,
      source: pooled ? "warm_pool" : "cold_boot",
      size,
      pool_hit: Boolean(pooled),
      create_ms: Math.round(ms),
      pool_hits: this.counters.hits,
      pool_misses: this.counters.misses,
    });
    const runDir = booted.runDir;
    return new MicrovmSandbox(
      spec.attemptId,
      this.isolation,
      booted.vm,
      runDir,
      hostWorkspaceDir,
      egress !== null,
      resources.diskMiB,
      () => this.live.delete(runDir),
    );
  }

  /** The guest mounts the job's writable view on its work disk; a VM that cannot is discarded. */
  private async mountWorkDisk(booted: BootedVm, size: SizeResources): Promise<void> {
    try {
      booted.vm.ctl.send(`MOUNT ${size.maxProcesses}`);
      const reply = await booted.vm.ctl.next(MOUNT_TIMEOUT_MS, "MOUNT");
      if (reply !== "MOUNT-OK")
        throw new MicrovmError("MICROVM.GUEST_PROTOCOL", `work disk mount failed: ${reply.slice(0, 300)}`);
    } catch (err) {
      await booted.vm.kill();
      await this.forget(booted.runDir, err);
    }
  }

  removeLeftovers(): Promise<number> {
    return removeLeftoverVms(this.workDir, this.live);
  }

  /** Kills the pooled VMs (sandboxes handed out are destroyed by their owners). */
  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.pool.stop()));
  }

  private bootTimeout(size: SizeResources): number {
    return BOOT_TIMEOUT_MS + (this.cfg.accel === "tcg" ? size.memoryMiB * TCG_BOOT_MS_PER_MIB : 0);
  }

  private async bootCold(rootfs: string, resources: SizeResources): Promise<BootedVm> {
    const runDir = await newRunDir(this.workDir, (d) => this.live.add(d));
    return coldBoot(this.cfg, rootfs, runDir, this.bootTimeout(resources), resources).catch((err: unknown) =>
      this.forget(runDir, err),
    );
  }

  private async restoreOne(snapshot: string, size: SizeResources): Promise<BootedVm> {
    const runDir = await newRunDir(this.workDir, (d) => this.live.add(d));
    const booted = await restoreSnapshot(
      this.cfg,
      this.assets.baseRootfs,
      snapshot,
      runDir,
      RESTORE_TIMEOUT_MS,
      size,
    ).catch((err: unknown) => this.forget(runDir, err));
    remember(this.counters.restore, booted.bootMs);
    return booted;
  }

  /** A VM that never came up: its directory goes (QEMU is already dead), the error propagates. */
  private async forget(runDir: string, err: unknown): Promise<never> {
    await rm(runDir, { recursive: true, force: true });
    this.live.delete(runDir);
    throw err;
  }
}

function describeSizes(sizes: SizeTable): string {
  return RUNNER_SIZES.map((n) => {
    const s = sizes[n];
    return `${n} ${s.vcpus} vCPU/${s.memoryMiB} MiB RAM/${s.diskMiB} MiB disk/${s.maxProcesses} processes`;
  }).join(", ");
}

function remember(list: number[], ms: number): void {
  list.push(Math.round(ms));
  if (list.length > 1000) list.shift();
}
