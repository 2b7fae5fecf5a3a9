// The process driver's side of mediated egress (docs/adr/0013-mediated-egress.md). A step runs in
// its own network namespace, which has nothing but a loopback. Its one way out is a forwarder
// started inside that namespace: socat listens on the namespace's 127.0.0.1:3128 and relays each
// connection to the attempt's unix socket on the host proxy (unix sockets are reached through the
// filesystem, not the network, so they cross the namespace boundary; nothing else does). The
// step's HTTP(S)_PROXY points at it. When the step's shell (pid 1 of its pid namespace) exits, the
// kernel kills the forwarder with everything else in the namespace.
import { access, constants } from "node:fs/promises";

export const SANDBOX_PROXY_PORT = 3128;
export const SANDBOX_PROXY_URL = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;

export interface ForwarderTools {
  ip: string;
  socat: string;
  sleep: string;
}

const CANDIDATES: Record<keyof ForwarderTools, string[]> = {
  ip: ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"],
  socat: ["/usr/bin/socat", "/usr/local/bin/socat", "/bin/socat"],
  sleep: ["/usr/bin/sleep", "/bin/sleep"],
};

/** Absolute paths (the step's PATH is the job's to change), or what is missing. */
export async function findForwarderTools(): Promise<ForwarderTools | { missing: string[] }> {
  const found: Partial<ForwarderTools> = {};
  const missing: string[] = [];
  for (const [tool, paths] of Object.entries(CANDIDATES) as [keyof ForwarderTools, string[]][]) {
    for (const p of paths) {
      if (await access(p, constants.X_OK).then(() => true, () => false)) {
        found[tool] = p;
        break;
      }
    }
    if (!found[tool]) missing.push(tool);
  }
  return missing.length > 0 ? { missing } : (found as ForwarderTools);
}

// $1 ip, $2 socat, $3 sleep, $4 host socket, $5 the step's command. Waits (up to ~10 s) until the
// forwarder listens, so the step's first request never races it; then the step's shell replaces
// this one. 0100007F:0C38 is 127.0.0.1:3128 in /proc/net/tcp, 0A is LISTEN.
const WRAPPER = `"$1" link set lo up || { echo "kiln: could not bring up the sandbox loopback" >&2; exit 125; }
"$2" TCP-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,reuseaddr,fork "UNIX-CONNECT:$4" </dev/null >/dev/null 2>&1 &
listening() { while read -r _ l _ s _; do [ "$l" = 0100007F:0C38 ] && [ "$s" = 0A ] && return 0; done < /proc/net/tcp; return 1; }
i=0
until listening; do
  i=$((i+1)); [ "$i" -gt 1000 ] && { echo "kiln: egress forwarder did not start" >&2; exit 125; }
  "$3" 0.01
done
exec /bin/sh -c "$5"`;

/** The argv (after `unshare ... --`) that runs `command` behind the forwarder. */
export function forwarderArgv(tools: ForwarderTools, socketPath: string, command: string): string[] {
  // socat splits addresses on ':' and ',' (and treats '!' specially); our socket paths never hold them.
  if (/[:,!\s]/.test(socketPath)) throw new Error(`egress socket path ${JSON.stringify(socketPath)} cannot be given to socat`);
  return ["/bin/sh", "-c", WRAPPER, "kiln-egress", tools.ip, tools.socat, tools.sleep, socketPath, command];
}
