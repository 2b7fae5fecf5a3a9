// The process driver's side of mediated egress (docs/adr/0013-mediated-egress.md). A step runs in
// its own network namespace, which has nothing but a loopback. Its one way out is a forwarder
// started inside that namespace: it brings the loopback up, listens on the namespace's
// 127.0.0.1:3128 and relays each connection to the attempt's unix socket on the host proxy (unix
// sockets are reached through the filesystem, not the network, so they cross the namespace
// boundary; nothing else does). The step's HTTP(S)_PROXY points at it.
//
// The forwarder is a short Perl program (perl-base is Essential on Debian, so every host has it):
// one exec does the ioctl, the bind and the fork, and the listening socket exists before the step's
// shell replaces it, so there is no readiness wait. socat + ip + a wait loop cost about 90 ms more
// per step on this machine (docs/benchmarks.md). When the step's shell (pid 1 of its pid
// namespace) exits, the kernel kills the forwarder with everything else in the namespace.
import { access, constants } from "node:fs/promises";

export const SANDBOX_PROXY_PORT = 3128;
export const SANDBOX_PROXY_URL = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;

export interface ForwarderTools {
  perl: string;
}

const PERL_CANDIDATES = ["/usr/bin/perl", "/bin/perl", "/usr/local/bin/perl"];

/** An absolute path (the step's PATH is the job's to change), or what is missing. */
export async function findForwarderTools(): Promise<ForwarderTools | { missing: string[] }> {
  for (const p of PERL_CANDIDATES) {
    if (await access(p, constants.X_OK).then(() => true, () => false)) return { perl: p };
  }
  return { missing: ["perl"] };
}

// ARGV: host socket path, the step's command. 0x8913/0x8914 are SIOCGIFFLAGS/SIOCSIFFLAGS on a
// 40-byte struct ifreq; IFF_UP is 1. Errors before the exec end the step with a named message.
const FORWARDER = String.raw`use strict; use warnings; use Socket;
my ($path, $cmd) = @ARGV;
# Bring the namespace's loopback up: SIOCGIFFLAGS / SIOCSIFFLAGS on "lo" (struct ifreq, 40 bytes).
socket(my $ctl, AF_INET, SOCK_DGRAM, 0) or die "kiln: egress forwarder: socket: $!\n";
my $ifr = pack("Z16 x24", "lo");
ioctl($ctl, 0x8913, $ifr) or die "kiln: egress forwarder: SIOCGIFFLAGS: $!\n";
my $flags = unpack("x16 s", $ifr);
ioctl($ctl, 0x8914, pack("Z16 s x22", "lo", $flags | 1)) or die "kiln: egress forwarder: SIOCSIFFLAGS: $!\n";
close $ctl;
socket(my $l, AF_INET, SOCK_STREAM, 0) or die "kiln: egress forwarder: socket: $!\n";
setsockopt($l, SOL_SOCKET, SO_REUSEADDR, 1);
bind($l, pack_sockaddr_in(3128, inet_aton("127.0.0.1"))) or die "kiln: egress forwarder: bind 127.0.0.1:3128: $!\n";
listen($l, 128) or die "kiln: egress forwarder: listen: $!\n";
my $pid = fork() // die "kiln: egress forwarder: fork: $!\n";
if ($pid == 0) {
  open(STDIN, "<", "/dev/null"); open(STDOUT, ">", "/dev/null"); open(STDERR, ">", "/dev/null");
  $SIG{CHLD} = "IGNORE";
  while (1) {
    accept(my $c, $l) or next;
    my $k = fork();
    if (defined $k && $k == 0) {
      close $l;
      socket(my $u, AF_UNIX, SOCK_STREAM, 0) or exit 1;
      connect($u, pack_sockaddr_un($path)) or exit 1;
      relay($c, $u);
      exit 0;
    }
    close $c;
  }
}
close $l;
exec("/bin/sh", "-c", $cmd) or die "kiln: exec /bin/sh: $!\n";
sub relay {
  my ($x, $y) = @_;
  my %to = (fileno($x) => [$x, $y], fileno($y) => [$y, $x]);
  my %open = map { $_ => 1 } keys %to;
  while (%open) {
    my $rin = ""; vec($rin, $_, 1) = 1 for keys %open;
    my $n = select(my $rout = $rin, undef, undef, undef);
    last if $n < 0;
    for my $fd (keys %open) {
      next unless vec($rout, $fd, 1);
      my ($from, $dst) = @{$to{$fd}};
      my $got = sysread($from, my $buf, 65536);
      if (!$got) { shutdown($dst, 1); delete $open{$fd}; next; }
      my $off = 0;
      while ($off < $got) { my $w = syswrite($dst, $buf, $got - $off, $off); return unless defined $w; $off += $w; }
    }
  }
}
`;

/** The argv (after `unshare ... --`) that runs `command` behind the forwarder. */
export function forwarderArgv(tools: ForwarderTools, socketPath: string, command: string): string[] {
  return [tools.perl, "-e", FORWARDER, socketPath, command];
}
