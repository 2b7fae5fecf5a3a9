// Host programs the driver needs, all from Debian packages (qemu-system-x86, linux-image-cloud-amd64,
// busybox-static, e2fsprogs). A missing one is a clear MICROVM.MISSING_TOOL naming the package.
import { execFile } from "node:child_process";
import { access, constants, readdir, readFile } from "node:fs/promises";
import { MicrovmError } from "./microvm-errors.ts";

const TOOLS = {
  qemu: { paths: ["/usr/bin/qemu-system-x86_64"], pkg: "qemu-system-x86" },
  busybox: { paths: ["/bin/busybox", "/usr/bin/busybox"], pkg: "busybox-static" },
  mkfs: { paths: ["/sbin/mkfs.ext4", "/usr/sbin/mkfs.ext4"], pkg: "e2fsprogs" },
} as const;

export type ToolName = keyof typeof TOOLS;

export async function findTool(name: ToolName): Promise<string> {
  for (const p of TOOLS[name].paths) {
    if (
      !(await access(p, constants.X_OK).then(
        () => true,
        () => false,
      ))
    )
      continue;
    // The guest has no libc: Debian's dynamically linked `busybox` package would not start there.
    if (name === "busybox" && hasElfInterpreter(await readFile(p))) {
      throw new MicrovmError("MICROVM.MISSING_TOOL", `${p} is dynamically linked (apt-get install busybox-static)`);
    }
    return p;
  }
  throw new MicrovmError("MICROVM.MISSING_TOOL", `${name} not found (apt-get install ${TOOLS[name].pkg})`);
}

/** True when an ELF64 binary names a dynamic loader (has a PT_INTERP program header). */
function hasElfInterpreter(elf: Buffer): boolean {
  if (elf.length < 64 || elf.readUInt32BE(0) !== 0x7f454c46) return false;
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    if (at + 4 <= elf.length && elf.readUInt32LE(at) === 3) return true;
  }
  return false;
}

/** The newest Debian cloud kernel under /boot and its module directory. */
export async function findCloudKernel(): Promise<{ vmlinuz: string; modulesDir: string; release: string }> {
  const names = (await readdir("/boot").catch(() => [] as string[]))
    .filter((n) => /^vmlinuz-.+-cloud-amd64$/.test(n))
    .sort();
  const newest = names.at(-1);
  if (!newest)
    throw new MicrovmError(
      "MICROVM.MISSING_TOOL",
      "no /boot/vmlinuz-*-cloud-amd64 (apt-get install linux-image-cloud-amd64)",
    );
  const release = newest.slice("vmlinuz-".length);
  return { vmlinuz: `/boot/${newest}`, modulesDir: `/lib/modules/${release}`, release };
}

/** Runs a program to completion; rejects with its stderr (trimmed) on failure. */
export function run(file: string, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      {
        cwd: opts.cwd,
        timeout: opts.timeoutMs ?? 120_000,
        maxBuffer: 16 * 1024 * 1024,
        env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
      },
      (err, stdout, stderr) => {
        if (err)
          reject(new Error(`${file} ${args.join(" ")} failed: ${String(stderr).trim().slice(0, 500) || err.message}`));
        else resolve(String(stdout));
      },
    );
  });
}
