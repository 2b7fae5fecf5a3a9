// What a process-driver step sees of the host filesystem. Without this, every step ran in the
// host's own mount tree: another job's workspace, log spool and egress socket were readable by
// path, and a root step's writes to / reached the next job. The step's mount namespace (unshare
// --mount, private propagation) is rearranged before the step's first instruction:
//   1. Under KILN_WORK_DIR only this sandbox exists: its root is bind-mounted over the work dir
//      (hiding every other sandbox, the spool, the image cache and the egress sockets), then again
//      at its own path so the step's absolute paths keep working. The step's directory is re-entered
//      by path: the inherited cwd would still point into the hidden tree, and `cd ..` would leave.
//   2. Every other mount becomes read-only (keeping the flags the kernel locks in a user namespace),
//      except /proc (the step's own, from --mount-proc) and /dev; /dev/shm gets a private tmpfs,
//      and /tmp and /var/tmp become the sandbox's tmp unless the work dir lives inside them.
//   3. CAP_SYS_ADMIN leaves the bounding set (setpriv), so a root step cannot unmount or remount
//      its way back to the host's view.
// The attempt's egress socket lives under the hidden work dir; for a forwarder started inside the
// step's namespace it is bound onto <root>/.egress.sock first and travels with the sandbox root.
import path from "node:path";

export const EGRESS_SOCKET_IN_ROOT = ".egress.sock";

const VIEW_SCRIPT = String.raw`set -u
root=$1 work=$2 sock=$3 setpriv=$4
shift 4
fail() { echo "kiln: sandbox filesystem view: $*" >&2; exit 125; }
cwd=$(pwd)
if [ -n "$sock" ]; then mount --bind "$sock" "$root/${EGRESS_SOCKET_IN_ROOT}" || fail "cannot bind the egress socket"; fi
mount --rbind "$root" "$work" || fail "cannot hide the work dir"
# "$root" now resolves inside the sandbox root itself: the mountpoint for its second view.
mkdir -p "$root" || fail "cannot create $root"
mount --rbind "$work" "$root" || fail "cannot mount the sandbox at $root"
while read -r _dev mp _type opts _rest; do
  mp=$(printf '%b' "$mp")
  case "$mp" in /proc | /proc/* | /dev | /dev/*) continue ;; esac
  case "$mp" in "$work" | "$work"/*) continue ;; esac
  case ",$opts," in *,ro,*) continue ;; esac
  keep=""
  for o in $(echo "$opts" | tr , ' '); do
    case "$o" in nosuid | nodev | noexec | noatime | nodiratime | relatime | strictatime) keep="$keep,$o" ;; esac
  done
  mount -o "remount,bind,ro$keep" "$mp" || fail "cannot make $mp read-only"
done < /proc/self/mounts
if [ -d /dev/shm ]; then mount -t tmpfs -o nosuid,nodev,size=64m,mode=1777 kiln-shm /dev/shm || fail "cannot mount a private /dev/shm"; fi
for t in /tmp /var/tmp; do
  [ -d "$t" ] || continue
  case "$work/" in "$t"/*) continue ;; esac
  mount --bind "$root/tmp" "$t" || fail "cannot mount the sandbox tmp on $t"
done
cd "$cwd" || fail "cannot enter $cwd"
if [ -n "$setpriv" ]; then exec "$setpriv" --bounding-set -sys_admin -- "$@"; fi
exec "$@"
`;

export interface PrivateViewSpec {
  /** The sandbox root (<workDir>/<attempt>). */
  root: string;
  workDir: string;
  /** The attempt's egress socket, when a forwarder inside the step's namespace must reach it. */
  egressSocket: string | null;
  setpriv: string | null;
}

/** argv that sets the view up inside the step's (already unshared) mount namespace, then execs argv. */
export function privateViewArgv(spec: PrivateViewSpec, argv: string[]): string[] {
  if (path.dirname(spec.root) !== spec.workDir) throw new Error(`sandbox root ${spec.root} is not directly under ${spec.workDir}`);
  return ["/bin/sh", "-c", VIEW_SCRIPT, "kiln-view", spec.root, spec.workDir, spec.egressSocket ?? "", spec.setpriv ?? "", ...argv];
}
