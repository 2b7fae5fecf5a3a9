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
// agent (user namespaces) starts it in each step's own namespace before the step's shell, and the
// kernel kills it with everything else there when that shell (pid 1) exits.
import { access, constants } from "node:fs/promises";
import { STEP_ENV_FD, STEP_EXEC_PERL } from "./step-exec.ts";

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

// ARGV: mode, host socket path, then (mode "exec") the step's arch, uid/gid ("" for the namespace's
// root), working directory and command: the step's shell is exec'd by step_exec (step-exec.ts),
// which drops every privilege (the forwarder itself needs CAP_NET_ADMIN for the loopback, the step
// must not keep it) and applies the step's environment, read from fd 3; this process never has it. Mode "exec": fork the forwarder, then become the step's shell. Mode "hold": print "ready" once listening and stay the forwarder (net-holder.ts). 0x8913/0x8914 are SIOCGIFFLAGS/SIOCSIFFLAGS on a
// 40-byte struct ifreq; IFF_UP is 1. Errors before the exec end the step with a named message.
const FORWARDER = String.raw`use strict; use warnings; use Socket;
my ($mode, $path, $arch, $ids, $cwd, $cmd) = @ARGV;
# Bring the namespace's loopback up: SIOCGIFFLAGS / SIOCSIFFLAGS on "lo" (struct ifreq, 40 bytes).
socket(my $ctl, AF_INET, SOCK_DGRAM, 0) or die "kiln: egress forwarder: socket: $!\n";
my $ifr = pack("Z16 x24", "lo");
ioctl($ctl, 0x8913, $ifr) or die "kiln: egress forwarder: SIOCGIFFLAGS: $!\n";
my $flags = unpack("x16 s", $ifr);
# Already up when the sandbox view did it as host root (a step's mapped root may not).
($flags & 1) or ioctl($ctl, 0x8914, pack("Z16 s x22", "lo", $flags | 1)) or die "kiln: egress forwarder: SIOCSIFFLAGS: $!\n";
close $ctl;
socket(my $l, AF_INET, SOCK_STREAM, 0) or die "kiln: egress forwarder: socket: $!\n";
setsockopt($l, SOL_SOCKET, SO_REUSEADDR, 1);
bind($l, pack_sockaddr_in(3128, inet_aton("127.0.0.1"))) or die "kiln: egress forwarder: bind 127.0.0.1:3128: $!\n";
listen($l, 128) or die "kiln: egress forwarder: listen: $!\n";
my $pid = $mode eq "hold" ? 0 : (fork() // die "kiln: egress forwarder: fork: $!\n");
if ($pid == 0) {
  print STDOUT "ready\n" if $mode eq "hold";
  # A holder's stdin is a pipe from the agent: EOF means the agent is gone, and so is this.
  open(my $agent, "<&", \*STDIN) or die "kiln: egress forwarder: dup stdin: $!\n";
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
      # The step's environment pipe (exec mode only: in a holder fd 3 may be anything).
      if ($mode eq "exec" && open(my $e, "<&=", ${STEP_ENV_FD})) { close $e; }
      socket(my $u, AF_UNIX, SOCK_STREAM, 0) or exit 1;
      connect($u, pack_sockaddr_un($path)) or exit 1;
      relay($c, $u);
      exit 0;
    }
    close $c;
  }
}
close $l;
step_exec($arch, $ids, $cwd, $cmd, read_step_env());
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
${STEP_EXEC_PERL}`;

/** The step a forwarder in the step's own namespace runs once it listens (step-exec.ts). */
export interface ForwardedStep {
  arch: string;
  /** The step's uid/gid, or "" to stay the user namespace's root (an unprivileged agent). */
  ids: string;
  cwd: string;
  command: string;
}

/** The argv (after `unshare ... --`, and the private view) that runs a step behind the forwarder. */
export function forwarderArgv(tools: ForwarderTools, socketPath: string, step: ForwardedStep): string[] {
  return [tools.perl, "-e", FORWARDER, "exec", socketPath, step.arch, step.ids, step.cwd, step.command];
}

/** The argv (after `unshare --net --`) of a long-lived forwarder that holds a sandbox's namespace. */
export function holderArgv(tools: ForwarderTools, socketPath: string): string[] {
  return [tools.perl, "-e", FORWARDER, "hold", socketPath];
}
