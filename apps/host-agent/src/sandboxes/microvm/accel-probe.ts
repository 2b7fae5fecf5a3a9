// KVM when it actually works, TCG otherwise. /dev/kvm existing proves nothing (on some hosts KVM
// guests hang), so the probe boots the real guest with a short deadline and keeps KVM only if the
// agent says READY in time.
import { access, constants, readFile, rm } from "node:fs/promises";
import { SIZE_RESOURCES } from "@kiln/domain";
import { coldBoot, newRunDir, type BootConfig } from "./vm-boot.ts";
import { tscKhzFromCpuinfo, type Accel } from "./qemu-command.ts";

// A working KVM boots this guest in well under a second; a hanging one never does.
const KVM_PROBE_TIMEOUT_MS = 5_000;

export interface AccelChoice {
  accel: Accel;
  reason: string;
}

export async function chooseAccel(
  mode: "auto" | Accel,
  cfg: Omit<BootConfig, "accel">,
  rootfs: string,
  workDir: string,
): Promise<AccelChoice> {
  if (mode === "tcg") return { accel: "tcg", reason: "TCG forced by configuration" };
  if (mode === "kvm") return { accel: "kvm", reason: "KVM forced by configuration" };
  if (
    !(await access("/dev/kvm", constants.R_OK | constants.W_OK).then(
      () => true,
      () => false,
    ))
  ) {
    return { accel: "tcg", reason: "TCG (no usable /dev/kvm)" };
  }
  const runDir = await newRunDir(workDir);
  try {
    const { vm, bootMs } = await coldBoot(
      { ...cfg, accel: "kvm" },
      rootfs,
      runDir,
      KVM_PROBE_TIMEOUT_MS,
      SIZE_RESOURCES.small,
    );
    await vm.kill();
    return { accel: "kvm", reason: `KVM (probe boot ready in ${Math.round(bootMs)} ms)` };
  } catch (err) {
    return {
      accel: "tcg",
      reason: `TCG (KVM probe boot failed: ${err instanceof Error ? err.message.slice(0, 120) : String(err)})`,
    };
  } finally {
    await rm(runDir, { recursive: true, force: true });
  }
}

export async function hostTscKhz(): Promise<number | null> {
  return tscKhzFromCpuinfo(await readFile("/proc/cpuinfo", "utf8").catch(() => ""));
}
