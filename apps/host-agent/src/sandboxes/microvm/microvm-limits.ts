// What each microVM gets (ADR 0041): its size's vCPUs and memory, enforced by QEMU, and its size's
// writable disk (work-disk.ts), which the guest mounts for the workspace, /tmp, $HOME and the
// root's writable layer. Nothing writable is RAM-backed any more except the step's private /dev.
import { SIZE_RESOURCES, type RunnerSize, type SizeResources } from "@kiln/domain";

/** Paths as a step sees them inside the guest. */
export const GUEST_PATHS = { workspace: "/workspace", home: "/home/kiln", tmp: "/tmp" } as const;

/** The size table a driver uses: the domain's figures, with a test's or operator's override per size. */
export type SizeTable = Readonly<Record<RunnerSize, SizeResources>>;

export function sizeTable(override: Partial<Record<RunnerSize, SizeResources>> = {}): SizeTable {
  return { ...SIZE_RESOURCES, ...override };
}
