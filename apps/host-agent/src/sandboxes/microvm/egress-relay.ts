// The host end of a microVM's one way out (docs/adr/0013-mediated-egress.md). The VM's network
// helper (qemu-command.ts, netHelperArgs) runs this relay once per guest connection to
// 10.0.2.100:3128, with that connection as its stdin and stdout (and stderr: so the relay never
// writes there). The relay connects to the VM's egress socket, which the agent serves (VmEgress):
// each connection there is joined to the attempt's own proxy socket once create() has linked one,
// and bytes are copied both ways; each side's close is passed on, which a guestfwd chardev cannot do.
//
// Not linked yet (a pooled VM not yet handed out, or an attempt without egress) or a closed
// listener: the connection is closed and the guest sees it closed with nothing sent. Perl because
// perl-base is Essential on Debian (the process driver's forwarder uses it for the same reason).
import { access, chown, constants, mkdir, rename, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type { EgressRelay } from "./qemu-command.ts";
import { MicrovmError } from "./microvm-errors.ts";

const PERL_CANDIDATES = ["/usr/bin/perl", "/bin/perl"];

const RELAY = String.raw`use strict; use warnings; use Socket;
open(STDERR, ">", "/dev/null");
my $path = $ARGV[0];
socket(my $u, AF_UNIX, SOCK_STREAM, 0) or exit 1;
connect($u, pack_sockaddr_un($path)) or exit 1;
my %dst = (0 => $u, fileno($u) => \*STDOUT);
my %src = (0 => \*STDIN, fileno($u) => $u);
my %open = (0 => 1, fileno($u) => 1);
while (%open) {
  my $rin = ""; vec($rin, $_, 1) = 1 for keys %open;
  my $n = select(my $rout = $rin, undef, undef, undef);
  if ($n < 0) { next if $!{EINTR}; last; }
  for my $fd (keys %open) {
    next unless vec($rout, $fd, 1);
    my $got = sysread($src{$fd}, my $buf, 65536);
    # EOF from one side: half-close the other, so a request body's end or a response's end arrives.
    if (!$got) { shutdown($dst{$fd}, 1); delete $open{$fd}; next; }
    my $off = 0;
    while ($off < $got) { my $w = syswrite($dst{$fd}, $buf, $got - $off, $off); exit 0 unless defined $w; $off += $w; }
  }
}
`;

/** Writes the relay script once per driver (beside the run directories) and finds perl. */
export async function installEgressRelay(workDir: string): Promise<Omit<EgressRelay, "socket">> {
  let perl: string | null = null;
  for (const p of PERL_CANDIDATES) {
    if (
      await access(p, constants.X_OK).then(
        () => true,
        () => false,
      )
    ) {
      perl = p;
      break;
    }
  }
  if (!perl) throw new MicrovmError("MICROVM.MISSING_TOOL", "perl not found (apt-get install perl-base)");
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  const script = path.join(workDir, "egress-relay.pl");
  const tmp = `${script}.${process.pid}.tmp`;
  // World-readable (it holds no secret): a jailed network helper reads it under its own uid.
  await writeFile(tmp, RELAY, { mode: 0o644 });
  await rename(tmp, script);
  return { perl, script };
}

/** The agent's end of one VM's egress: a socket in its run directory that the relay dials. */
export class VmEgress {
  private target: string | null = null;
  private readonly conns = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly socketPath: string,
  ) {
    server.on("connection", (guest) => this.join(guest));
  }

  /** Listens on `socketPath`; `owner` (a jailed helper's uid) is the only one who may connect. */
  static async listen(socketPath: string, owner: number | null): Promise<VmEgress> {
    const server = net.createServer({ allowHalfOpen: true });
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(socketPath, () => resolve()));
    if (owner !== null) await chown(socketPath, owner, owner);
    return new VmEgress(server, socketPath);
  }

  /** Points the VM at its attempt's proxy socket: from now on the guest can dial out. */
  link(attemptSocket: string): void {
    this.target = attemptSocket;
  }

  close(): void {
    this.server.close();
    for (const c of this.conns) c.destroy();
  }

  private join(guest: net.Socket): void {
    if (!this.target) {
      guest.destroy();
      return;
    }
    const proxy = net.connect({ path: this.target, allowHalfOpen: true });
    for (const s of [guest, proxy]) {
      this.conns.add(s);
      s.once("close", () => this.conns.delete(s));
      // Either side failing ends both: a half-open pair would hold the relay and the guest socket.
      s.once("error", () => {
        guest.destroy();
        proxy.destroy();
      });
    }
    // pipe() ends the other side when one side ends: a half-close passes through.
    guest.pipe(proxy);
    proxy.pipe(guest);
  }
}
