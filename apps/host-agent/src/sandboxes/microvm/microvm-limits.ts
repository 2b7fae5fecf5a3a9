// Limits every microVM gets, enforced by QEMU and the guest kernel (outside the step's reach):
// one vCPU, fixed RAM, and size-capped tmpfs for everything writable. They are baked into the
// initramfs (limits.sh) and so into the warm-pool snapshot; changing them changes the asset key.
export const VM_MEMORY = "256M";
export const VM_CPUS = 1;

/** tmpfs sizes inside the guest (all RAM-backed, so their sum may exceed RAM only because they are caps). */
const GUEST_LIMITS = {
  ROOT_RW_SIZE: "64m", // writes to / (overlay upper layer over the read-only image)
  TMP_SIZE: "64m",
  WORKSPACE_SIZE: "128m",
  HOME_SIZE: "32m",
} as const;

/** Paths as a step sees them inside the guest. */
export const GUEST_PATHS = { workspace: "/workspace", home: "/home/kiln", tmp: "/tmp" } as const;

export function limitsScript(): string {
  return Object.entries(GUEST_LIMITS)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n")
    .concat("\n");
}
