// The host end of a microVM's one way out (docs/adr/0013-mediated-egress.md). QEMU's guestfwd runs
// this relay once per guest connection to 10.0.2.100:3128, with that connection as its stdin and
// stdout (and stderr: so the relay never writes there). It connects to the VM's egress link, a
// symlink in the VM's run directory that create() points at the attempt's own proxy socket, and
// copies bytes both ways; each side's close is passed on, which a guestfwd chardev cannot do.
//
// No link (a pooled VM not yet handed out, or an attempt without egress) or a closed listener: the
// relay exits and the guest sees its connection closed with nothing sent. Perl because perl-base
// is Essential on Debian (the process driver's forwarder uses it for the same reason).
import { access, constants, mkdir, rename, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { egressSocketLink, type EgressRelay } from "./qemu-command.ts";
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
export async function installEgressRelay(workDir: string): Promise<EgressRelay> {
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
  await writeFile(tmp, RELAY, { mode: 0o600 });
  await rename(tmp, script);
  return { perl, script };
}

/** Points a VM's egress link at its attempt's proxy socket: from now on the guest can dial out. */
export async function linkEgress(runDir: string, attemptSocket: string): Promise<void> {
  await symlink(attemptSocket, egressSocketLink(runDir));
}
