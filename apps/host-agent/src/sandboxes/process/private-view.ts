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
// Perl, not sh + mount(8): one process calls mount(2) for every mount (a host has a dozen or more),
// where an exec of mount per mount cost about 80 ms per step on this machine (perl-base is
// Essential on Debian; the egress forwarder needs it too).
import path from "node:path";

export const EGRESS_SOCKET_IN_ROOT = ".egress.sock";

const VIEW_SCRIPT = String.raw`use strict; use warnings; use Config; use Cwd ();
my ($root, $work, $sock, $setpriv, @argv) = @ARGV;
sub fail { print STDERR "kiln: sandbox filesystem view: @_\n"; exit 125 }
my ($arch) = $Config{archname} =~ /^([^-]+)/;
my $SYS_mount = { x86_64 => 165, aarch64 => 40 }->{$arch} // fail("no mount syscall number for $arch");
my ($RDONLY, $NOSUID, $NODEV, $NOEXEC, $REMOUNT, $NOATIME, $NODIRATIME, $BIND, $REC, $RELATIME, $STRICTATIME) = (1, 2, 4, 8, 32, 1024, 2048, 4096, 16384, 1 << 21, 1 << 24);
my %keep = (nosuid => $NOSUID, nodev => $NODEV, noexec => $NOEXEC, noatime => $NOATIME, nodiratime => $NODIRATIME, relatime => $RELATIME, strictatime => $STRICTATIME);
# Numbers go to syscall() as integers, strings as pointers: 0 is NULL.
sub mnt { my ($src, $dst, $type, $flags, $data, $what) = @_; syscall($SYS_mount, $src, $dst, $type, $flags, $data) == 0 or fail("$what: $!"); }
my $cwd = Cwd::getcwd() // fail("getcwd: $!");
mnt($sock, "$root/${EGRESS_SOCKET_IN_ROOT}", 0, $BIND, 0, "cannot bind the egress socket") if $sock ne "";
mnt($root, $work, 0, $BIND | $REC, 0, "cannot hide the work dir");
mkdir($root) or $!{EEXIST} or fail("mkdir $root: $!");
mnt($work, $root, 0, $BIND | $REC, 0, "cannot mount the sandbox at $root");
open(my $fh, "<", "/proc/self/mounts") or fail("/proc/self/mounts: $!");
my @mounts = <$fh>;
close $fh;
for (@mounts) {
  my (undef, $mp, undef, $opts) = split / /;
  $mp =~ s/\\([0-7]{3})/chr(oct($1))/ge;
  next if $mp =~ m{^/(?:proc|dev)(?:/|$)} || $mp eq $work || index($mp, "$work/") == 0;
  my %o = map { $_ => 1 } split /,/, $opts;
  next if $o{ro};
  my $flags = $REMOUNT | $BIND | $RDONLY;
  $flags |= $keep{$_} for grep { $o{$_} } keys %keep;
  mnt(0, $mp, 0, $flags, 0, "cannot make $mp read-only");
}
mnt("kiln-shm", "/dev/shm", "tmpfs", $NOSUID | $NODEV, "size=64m,mode=1777", "cannot mount a private /dev/shm") if -d "/dev/shm";
for my $t ("/tmp", "/var/tmp") {
  next if !-d $t || index("$work/", "$t/") == 0;
  mnt("$root/tmp", $t, 0, $BIND, 0, "cannot mount the sandbox tmp on $t");
}
chdir($cwd) or fail("cannot enter $cwd: $!");
if ($setpriv ne "") { exec($setpriv, "--bounding-set", "-sys_admin", "--", @argv) or fail("exec $setpriv: $!"); }
exec { $argv[0] } @argv or fail("exec $argv[0]: $!");
`;

export interface PrivateViewSpec {
  /** The sandbox root (<workDir>/<attempt>). */
  root: string;
  workDir: string;
  /** The attempt's egress socket, when a forwarder inside the step's namespace must reach it. */
  egressSocket: string | null;
  setpriv: string | null;
  /** perl-base (Essential on Debian): one process makes every mount, no exec per mount. */
  perl: string;
}

/** argv that sets the view up inside the step's (already unshared) mount namespace, then execs argv. */
export function privateViewArgv(spec: PrivateViewSpec, argv: string[]): string[] {
  if (path.dirname(spec.root) !== spec.workDir)
    throw new Error(`sandbox root ${spec.root} is not directly under ${spec.workDir}`);
  return [spec.perl, "-e", VIEW_SCRIPT, spec.root, spec.workDir, spec.egressSocket ?? "", spec.setpriv ?? "", ...argv];
}
