import { SIZE_RESOURCES } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { VM_CPUS, VM_MEMORY } from "./microvm-limits.ts";
import { qemuArgs, type QemuLaunch } from "./qemu-command.ts";

// Runner sizes (issue 20): the VM QEMU is told to build has the size's vCPUs and memory.
const launch: QemuLaunch = {
  accel: "tcg",
  vmlinuz: "/a/vmlinuz",
  initramfs: "/a/initramfs",
  rootfs: "/a/rootfs.img",
  runDir: "/r",
  tscKhz: null,
};

function flag(args: string[], name: string): string | undefined {
  return args[args.indexOf(name) + 1];
}

describe("qemu args per size", () => {
  it("keeps the warm pool's small VM when no size is given", () => {
    const args = qemuArgs(launch);
    expect(flag(args, "-smp")).toBe(String(VM_CPUS));
    expect(flag(args, "-m")).toBe(VM_MEMORY);
    expect(SIZE_RESOURCES.small).toEqual({ vcpus: VM_CPUS, memoryMiB: Number.parseInt(VM_MEMORY, 10) });
  });

  it("gives a large job four vCPUs and 4 GiB", () => {
    const args = qemuArgs({ ...launch, resources: SIZE_RESOURCES.large });
    expect(flag(args, "-smp")).toBe("4");
    expect(flag(args, "-m")).toBe("4096M");
  });
});
