import { SIZE_RESOURCES } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { sizeTable } from "./microvm-limits.ts";
import { qemuArgs, type QemuLaunch } from "./qemu-command.ts";

// Runner sizes (issue 20, real resources since issue 30; ADR 0041): the VM QEMU is told to build has
// the size's vCPUs and memory, and the size's work disk as its second, writable block device.
const launch: Omit<QemuLaunch, "resources"> = {
  accel: "tcg",
  vmlinuz: "/a/vmlinuz",
  initramfs: "/a/initramfs",
  rootfs: "/a/rootfs.img",
  runDir: "/r",
  tscKhz: null,
  workDisk: "/r/disk.img",
};

function flag(args: string[], name: string): string | undefined {
  return args[args.indexOf(name) + 1];
}

function values(args: string[], name: string): string[] {
  return args.filter((_, i) => args[i - 1] === name);
}

describe("qemu args per size", () => {
  it("gives a small job one vCPU and 2 GiB, a large one two vCPUs and 8 GiB (a 2-core host)", () => {
    const small = qemuArgs({ ...launch, resources: SIZE_RESOURCES.small });
    expect(flag(small, "-smp")).toBe("1");
    expect(flag(small, "-m")).toBe("2048M");
    const large = qemuArgs({ ...launch, resources: SIZE_RESOURCES.large });
    expect(flag(large, "-smp")).toBe("2");
    expect(flag(large, "-m")).toBe("8192M");
  });

  it("attaches the root read-only first and the work disk writable second", () => {
    const args = qemuArgs({ ...launch, resources: SIZE_RESOURCES.medium });
    const drives = values(args, "-drive");
    expect(drives).toHaveLength(2);
    expect(drives[0]).toMatch(/^id=root,file=\/a\/rootfs\.img,.*readonly=on/);
    expect(drives[1]).toMatch(/^id=work,file=\/r\/disk\.img,format=raw/);
    expect(drives[1]).not.toContain("readonly");
    expect(values(args, "-device").filter((d) => d.startsWith("virtio-blk-device"))).toEqual([
      "virtio-blk-device,drive=root",
      "virtio-blk-device,drive=work",
    ]);
  });

  it("grows with the size and lets a test or operator override one size", () => {
    expect(SIZE_RESOURCES.small.diskMiB).toBeLessThan(SIZE_RESOURCES.medium.diskMiB);
    expect(SIZE_RESOURCES.medium.diskMiB).toBeLessThan(SIZE_RESOURCES.large.diskMiB);
    const tiny = { vcpus: 1, memoryMiB: 256, diskMiB: 64, maxProcesses: 128 };
    const table = sizeTable({ small: tiny });
    expect(table.small).toEqual(tiny);
    expect(table.large).toEqual(SIZE_RESOURCES.large);
  });
});
