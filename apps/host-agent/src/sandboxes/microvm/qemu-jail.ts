// Where a QEMU process lives on the host (docs/adr/0011, amended for issue 28). QEMU parses
// everything the guest does to its devices and its network; a bug there must not be host root.
//
// A root agent starts every QEMU (the VM's and its network helper's) as:
//   setpriv --pdeathsig KILL -> unshare --mount --net (private propagation) -> sh JAIL_SCRIPT
//   -> chroot <view> -> setpriv (own uid/gid, no groups but /dev/kvm's, no capabilities, no_new_privs,
//      pdeathsig again: a credential change clears it) -> qemu -sandbox on,...
// The view is a fresh tmpfs in the new mount namespace (the host never sees it): read-only, nosuid
// binds of /usr and the merged-/usr symlinks, /etc/ld.so.cache, the few device nodes QEMU opens, and
// the files this VM needs under /vm (kernel, initramfs, root image; for the helper, the relay script
// and the VM's egress socket). Nothing else of the host exists there: no data dir, no work dir, no
// other VM, no /tmp, no /proc. Everything else QEMU talks to (its serial ports, QMP, the console, the
// network link, a snapshot stream) is a file descriptor the agent hands it at spawn.
// The wrapper chain gets a fixed environment and cwd /; nothing tenant-controlled reaches it (the
// files named are the agent's own cache and run directory).
// An agent that is not root cannot change uid or mount: QEMU then runs as the agent, still under
// -sandbox on, without a view.
import { randomInt } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import path from "node:path";

/** Host uid/gid range of QEMU processes ("kvm\0"); distinct from the process driver's 0x6b696c00 range. */
export const QEMU_HOST_ID_BASE = 0x6b766d00;
const QEMU_ID_COUNT = 65536;

const SETPRIV = "/usr/bin/setpriv";
const UNSHARE = "/usr/bin/unshare";
const CHROOT = "/usr/sbin/chroot";
const IP = "/bin/ip";
/** Where the per-VM files appear inside the view. */
const VIEW_FILES_DIR = "/vm";
/** The wrapper chain's whole environment: no variable of the agent's (or anyone's) passes. */
export const JAIL_ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" } as const;

const isRoot = process.getuid?.() === 0;
/** Root and util-linux present: QEMU runs jailed (uid, mount and network namespace). */
export const qemuJailed = isRoot && [SETPRIV, UNSHARE, CHROOT, IP].every((p) => existsSync(p));
const setprivPath = existsSync(SETPRIV) ? SETPRIV : null;

// $1 view mount point, $2 uid, $3 extra group ("" for none), $4 bind count, then count pairs of
// (host file, name under /vm), then the QEMU argv. set -e: any failed mount aborts the start.
const JAIL_SCRIPT = String.raw`set -eu
view=$1 id=$2 group=$3 n=$4; shift 4
ip link set lo up
mount -t tmpfs -o mode=0755,size=1m,nosuid,nodev kiln-qemu "$view"
mkdir "$view/usr" "$view/dev" "$view/etc" "$view/vm"
mount -o bind,ro,nosuid,nodev /usr "$view/usr"
for l in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$view/$l"
  elif [ -d "/$l" ]; then mkdir "$view/$l"; mount -o bind,ro,nosuid,nodev "/$l" "$view/$l"; fi
done
if [ -f /etc/ld.so.cache ]; then : > "$view/etc/ld.so.cache"; mount -o bind,ro /etc/ld.so.cache "$view/etc/ld.so.cache"; fi
for d in null zero full random urandom kvm; do
  if [ -c "/dev/$d" ]; then : > "$view/dev/$d"; mount -o bind,nosuid "/dev/$d" "$view/dev/$d"; fi
done
while [ "$n" -gt 0 ]; do
  : > "$view/vm/$2"; mount -o bind,nosuid,nodev "$1" "$view/vm/$2"; shift 2; n=$((n - 1))
done
mount -o remount,ro,nosuid,nodev "$view"
if [ -n "$group" ]; then groups="--groups=$group"; else groups=--clear-groups; fi
exec chroot "$view" /usr/bin/setpriv --reuid="$id" --regid="$id" "$groups" --inh-caps=-all --bounding-set=-all --no-new-privs --pdeathsig KILL -- "$@"
`;

export interface JailIds {
  /** The VM's QEMU. */
  vm: number;
  /** Its network helper: another uid, so neither can signal or trace the other. */
  net: number;
}

const idsInUse = new Set<number>();

/** A pair of unused ids from the QEMU range (per agent; random, so two agents rarely meet). */
export function allocateJailIds(): JailIds {
  for (;;) {
    const vm = QEMU_HOST_ID_BASE + 2 * randomInt(QEMU_ID_COUNT / 2);
    if (idsInUse.has(vm)) continue;
    idsInUse.add(vm);
    return { vm, net: vm + 1 };
  }
}

export function releaseJailIds(ids: JailIds): void {
  idsInUse.delete(ids.vm);
}

export interface JailSpec {
  /** An empty directory the view's tmpfs is mounted on (in the new namespace only). */
  viewDir: string;
  uid: number;
  /** Host files made visible read-write or read-only (by their own modes) as /vm/<name>. */
  files: Record<string, string>;
  /** Allow /dev/kvm (its group joins the process). */
  kvm: boolean;
}

/** Where a jailed QEMU finds a file it was given under `name` (or the host path, unjailed). */
export function pathInJail(name: string, hostPath: string): string {
  return qemuJailed ? path.posix.join(VIEW_FILES_DIR, name) : hostPath;
}

/**
 * The argv that starts `qemu` (absolute path) with `args`, jailed when the agent can, and always
 * with the parent-death signal so a VM never outlives its agent however the agent dies.
 */
export function jailedArgv(qemu: string, args: string[], spec: JailSpec): string[] {
  const pdeath = setprivPath ? [setprivPath, "--pdeathsig", "KILL", "--"] : [];
  if (!qemuJailed) return [...pdeath, qemu, ...args];
  const binds = Object.entries(spec.files).flatMap(([name, host]) => {
    if (!/^[a-z0-9][a-z0-9.-]*$/.test(name)) throw new Error(`bad jail file name ${name}`);
    return [host, name];
  });
  const group = spec.kvm && existsSync("/dev/kvm") ? String(statSync("/dev/kvm").gid) : "";
  return [
    ...pdeath,
    UNSHARE,
    "--mount",
    "--net",
    "--propagation",
    "private",
    "--",
    "/bin/sh",
    "-c",
    JAIL_SCRIPT,
    "kiln-qemu-jail",
    spec.viewDir,
    String(spec.uid),
    group,
    String(binds.length / 2),
    ...binds,
    qemu,
    ...args,
  ];
}
