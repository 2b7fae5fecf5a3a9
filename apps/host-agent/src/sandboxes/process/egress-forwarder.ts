// The process driver's side of mediated egress (docs/adr/0013-mediated-egress.md). A step runs in
// its own network namespace, which has nothing but a loopback. Its one way out is a forwarder
// started inside that namespace: it brings the loopback up, listens on the namespace's
// 127.0.0.1:3128 and relays each connection to the attempt's unix socket on the host proxy (unix
// sockets are reached through the filesystem, not the network, so they cross the namespace
// boundary; nothing else does). The step's HTTP(S)_PROXY points at it.
//
// The forwarder is a short Perl program (perl-base is Essential on Debian, so every host has it):
// one exec does the ioctl, the bind and the fork (socat + ip + a readiness wait cost about 90 ms
// more per step on this machine). A root agent starts it once per sandbox, holding a network
// namespace every step then enters (net-holder.ts), so steps pay nothing for it; an unprivileged
// agent (user namespaces), or a host without nsenter, has the sandbox view fork it in each step's
// own namespace before the step's shell (FORWARD_PERL), and the kernel kills it with everything
// else there when the namespace's init exits.
import { access, constants } from "node:fs/promises";
import { STEP_ENV_FD } from "./step-exec.ts";

const SANDBOX_PROXY_PORT = 3128;
export const SANDBOX_PROXY_URL = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;

export interface ForwarderTools {
  perl: string;
  /** util-linux nsenter: lets a root agent run every step in the sandbox's one held namespace. */
  nsenter: string | null;
}

const PERL_CANDIDATES = ["/usr/bin/perl", "/bin/perl", "/usr/local/bin/perl"];
const NSENTER_CANDIDATES = ["/usr/bin/nsenter", "/bin/nsenter", "/usr/sbin/nsenter", "/usr/local/bin/nsenter"];

async function firstExecutable(paths: string[]): Promise<string | null> {
  for (const p of paths) {
    if (
      await access(p, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return p;
  }
  return null;
}

/** Absolute paths (the step's PATH is the job's to change), or what is missing. */
export async function findForwarderTools(): Promise<ForwarderTools | { missing: string[] }> {
  const perl = await firstExecutable(PERL_CANDIDATES);
  if (!perl) return { missing: ["perl"] };
  return { perl, nsenter: await firstExecutable(NSENTER_CANDIDATES) };
}

// forwarder_start($mode, $path): brings the namespace's loopback up, listens on 127.0.0.1:3128 and
// relays every connection to the unix socket at $path. Mode "hold": print "ready" once listening and
// stay the forwarder (net-holder.ts). Mode "step": fork the forwarder and return, so the caller (the
// sandbox view, private-view.ts) goes on to step_exec; it runs in the same Perl process as the view,
// after pivot_root, so nothing has to be exec'd from the new root (a job image has no perl, and the
// host's /usr is not there). No modules: the view loads none (about 11 ms per step for Socket and
// POSIX), so the socket constants are Linux's own numbers (AF_INET 2, AF_UNIX 1, SOCK_STREAM 1,
// SOCK_DGRAM 2, SOL_SOCKET 1, SO_REUSEADDR 2). 0x8913/0x8914 are SIOCGIFFLAGS/SIOCSIFFLAGS on a
// 40-byte struct ifreq; IFF_UP is 1.
export const FORWARD_PERL = String.raw`
sub forwarder_start {
  my ($mode, $path) = @_;
  my $die = sub { print STDERR "kiln: egress forwarder: @_\n"; exit 125 };
  socket(my $ctl, 2, 2, 0) or $die->("socket: $!");
  my $ifr = pack("Z16 x24", "lo");
  ioctl($ctl, 0x8913, $ifr) or $die->("SIOCGIFFLAGS: $!");
  my $flags = unpack("x16 s", $ifr);
  # Already up when the sandbox view did it as host root (a step's mapped root may not).
  ($flags & 1) or ioctl($ctl, 0x8914, pack("Z16 s x22", "lo", $flags | 1)) or $die->("SIOCSIFFLAGS: $!");
  close $ctl;
  socket(my $l, 2, 1, 0) or $die->("socket: $!");
  setsockopt($l, 1, 2, 1);
  bind($l, pack("S n C4 x8", 2, 3128, 127, 0, 0, 1)) or $die->("bind 127.0.0.1:3128: $!");
  listen($l, 128) or $die->("listen: $!");
  my $pid = $mode eq "hold" ? 0 : (fork() // $die->("fork: $!"));
  if ($pid != 0) { close $l; return; }
  # The step's environment pipe (step mode): never held by the forwarder, which outlives no step.
  if ($mode ne "hold" && open(my $e, "<&=", ${STEP_ENV_FD})) { close $e; }
  print STDOUT "ready\n" if $mode eq "hold";
  # A holder's stdin is a pipe from the agent: EOF means the agent is gone, and so is this.
  open(my $agent, "<&", \*STDIN) or $die->("dup stdin: $!");
  open(STDIN, "<", "/dev/null"); open(STDOUT, ">", "/dev/null"); open(STDERR, ">", "/dev/null");
  $SIG{CHLD} = "IGNORE";
  while (1) {
    if ($mode eq "hold") {
      my $rin = ""; vec($rin, fileno($l), 1) = 1; vec($rin, fileno($agent), 1) = 1;
      next if select(my $rout = $rin, undef, undef, undef) <= 0;
      exit 0 if vec($rout, fileno($agent), 1) && !sysread($agent, my $byte, 1);
      next unless vec($rout, fileno($l), 1);
    }
    accept(my $c, $l) or next;
    my $k = fork();
    if (defined $k && $k == 0) {
      close $l; close $agent;
      socket(my $u, 1, 1, 0) or exit 1;
      connect($u, pack("S Z108", 1, $path)) or exit 1;
      forwarder_relay($c, $u);
      exit 0;
    }
    close $c;
  }
}
sub forwarder_relay {
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

const HOLDER = String.raw`use strict; use warnings;
forwarder_start("hold", $ARGV[0]);
${FORWARD_PERL}`;

/** The argv (after `unshare --net --`) of a long-lived forwarder that holds a sandbox's namespace. */
export function holderArgv(tools: ForwarderTools, socketPath: string): string[] {
  return [tools.perl, "-e", HOLDER, socketPath];
}
