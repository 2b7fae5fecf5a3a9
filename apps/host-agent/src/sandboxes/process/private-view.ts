// What a process-driver step sees of the host, and who it is there (docs/adr/0019). The step's
// pid/ipc/uts (and net) namespaces already exist when this runs (unshare, or nsenter into the
// sandbox's held network namespace); one Perl process then, before the step's first instruction:
//   1. (root agent) forks the step side into a new user + mount namespace; the parent, still host
//      root and the pid namespace's init (pid 1; the step's shell is pid 2), maps the child's
//      uids/gids 0..65535 onto an unused host range
//      (SANDBOX_HOST_ID_BASE), so nothing in the step is host root even before it drops privileges.
//      An unprivileged agent is already in a user namespace (unshare --user --map-root-user).
//   2. builds a new root on a tmpfs. With a job image (issue 30) its top-level entries are the
//      image's own, bound read-only from the verified, unpacked rootfs (images/prepare-image.ts,
//      the same one the microvm driver boots); /etc and the directories on the way to the sandbox
//      are filled entry by entry instead, so the view's own mount points never land in the shared
//      rootfs, and passwd/group are the image's plus the step user. Without one (a pool that
//      declared `host` on purpose, and the driver's start-up probe): read-only binds of /usr and the top-level system directories
//      (or their merged-/usr symlinks), an /etc of the world-readable entries only, minus the
//      password and group shadows (passwd and group are generated), a minimal /dev (null, zero,
//      full, random, urandom, tty, a private devpts with ptmx, a private shm), the step's own
//      /proc, and the sandbox root at its own path. The whole tree is made read-only and nosuid in
//      one recursive mount_setattr; only the sandbox's workspace/home/tmp (and /tmp, /var/tmp
//      bound to the sandbox's tmp) stay writable. pivot_root drops the host's tree: other
//      sandboxes, every agent's work and state directory, the instance data directory, the
//      platform checkout, /root, /home, /var, /run, /sys and the host's block devices are absent,
//      not just unreadable.
//   3. sets rlimits (processes, file size, core dumps): the host has no cgroup v2 controllers to
//      delegate (see the driver's isolation detail), so these are the limits a step gets.
//   4. drops every privilege and execs the step's shell with the step's environment (step-exec.ts:
//      uid/gid SANDBOX_STEP_ID for a root agent, in-namespace root otherwise; no supplementary
//      groups; every capability set empty; no_new_privs), or, for a forwarder in the step's
//      namespace, execs the forwarder, which does the same once it brought the loopback up.
//      Until that last exec every process runs with WRAPPER_ENV and cwd "/" (issue 28).
// Host-root-owned directories on the way to the sandbox (the work dir is 0700) cannot be walked by
// the mapped root, so the mounts under the work dir are cloned (open_tree) before the user namespace
// exists and attached with move_mount. Perl, not sh + mount(8): one process makes every mount.
import path from "node:path";
import { FORWARD_PERL } from "./egress-forwarder.ts";
import { STEP_ENV_FD, STEP_EXEC_PERL } from "./step-exec.ts";

export const EGRESS_SOCKET_IN_ROOT = ".egress.sock";
/** Host uid/gid that in-sandbox id 0 maps to ("kil\0"); 65536 ids from here belong to sandboxes. */
const SANDBOX_HOST_ID_BASE = 0x6b696c00;
/** The uid/gid a step runs as inside its user namespace (root agent). */
export const SANDBOX_STEP_ID = 1000;
/** Host uid/gid of a step's files and processes (root agent). */
export const SANDBOX_HOST_STEP_ID = SANDBOX_HOST_ID_BASE + SANDBOX_STEP_ID;

export interface SandboxLimits {
  /** RLIMIT_NPROC: a fork bomb stops here (counted per user namespace, so per step). */
  processes: number;
  /** RLIMIT_FSIZE: the largest single file a step may write. */
  fileSizeBytes: number;
  /**
   * RLIMIT_DATA: the writable private memory (heap and anonymous mappings) one step process may hold.
   * Without cgroup v2 this is the memory bound there is: per process, not per job. Reservations
   * without write access (V8's cage, WebAssembly guards, a JVM's unused heap) do not count.
   */
  dataBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  processes: 4096,
  fileSizeBytes: 16 * 1024 ** 3,
  dataBytes: 8 * 1024 ** 3,
};

// No modules beyond strict/warnings: loading Config and POSIX alone cost about 12 ms per step here.
const VIEW_SCRIPT = String.raw`use strict; use warnings;
my ($arch, $root, $work, $sock, $image, $mapIds, $nproc, $fsize, $data, $then, @rest) = @ARGV;
sub fail { print STDERR "kiln: sandbox view: @_\n"; exit 125 }
my %nr = (x86_64 => [165, 166, 155, 272, 302, 260, 117, 119, 3], aarch64 => [40, 39, 41, 97, 261, 54, 147, 149, 57]);
my ($SYS_mount, $SYS_umount2, $SYS_pivot_root, $SYS_unshare, $SYS_prlimit, $SYS_fchownat, $SYS_setresuid, $SYS_setresgid, $SYS_close) = @{$nr{$arch} // fail("no syscall numbers for $arch")};
# fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW): the link itself, never its target.
sub lchown_ { my ($id, $p) = @_; syscall($SYS_fchownat, -100, $p, $id, $id, 0x100) == 0 }
my $SYS_mount_setattr = 442;
my ($RDONLY, $NOSUID, $NODEV, $NOEXEC, $REMOUNT, $BIND, $REC) = (1, 2, 4, 8, 32, 4096, 16384);
my ($SYS_open_tree, $SYS_move_mount) = (428, 429);
sub mnt { my ($src, $dst, $type, $flags, $data, $what) = @_; syscall($SYS_mount, $src, $dst, $type, $flags, $data) == 0 or fail("$what: $!"); }
# A detached copy of a mount (open_tree OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC), attached later
# with move_mount: unlike a path, it stays usable from inside the new user and mount namespace.
sub clone_tree { my $fd = syscall($SYS_open_tree, -100, $_[0], 1 | 0x8000 | 0x80000); $fd >= 0 or fail("open_tree $_[0]: $!"); $fd }
sub attach { my ($fd, $dst, $what) = @_; my $empty = ""; syscall($SYS_move_mount, $fd, $empty, -100, $dst, 4) == 0 or fail("$what: $!"); }
my $id = substr($root, length($work) + 1);
# Taken while still host root: the work dir is 0700 and the mapped root cannot walk it.
my $rootTree = clone_tree($root);
my @tmpTrees = (clone_tree("$root/tmp"), clone_tree("$root/tmp"));
my $sockTree = $sock ne "" ? clone_tree($sock) : undef;
my $imageTree = $image ne "" ? clone_tree($image) : undef;
my $hid = $mapIds ? $mapIds + ${SANDBOX_STEP_ID} : -1;
# The agent (host root) checked the source out and may have written between steps: hand the
# sandbox's files to the step's host id. lstat/lchown only, so a step's symlink leads nowhere.
sub own {
  my ($p) = @_;
  my @st = lstat($p) or return;
  if ($st[4] != $hid || $st[5] != $hid) { lchown_($hid, $p) or fail("chown $p: $!"); }
  return unless ($st[2] & 0170000) == 0040000;
  opendir(my $d, $p) or fail("opendir $p: $!");
  my @e = grep { $_ ne "." && $_ ne ".." } readdir $d;
  closedir $d;
  own("$p/$_") for @e;
}
if ($mapIds && $sock ne "") {
  # The step's forwarder (egress-forwarder.ts) runs as the mapped root, which holds no
  # CAP_NET_ADMIN over this network namespace (it belongs to the host's user namespace): the
  # loopback is brought up here, before the user namespace exists.
  socket(my $ctl, 2, 2, 0) or fail("socket: $!");
  my $ifr = pack("Z16 x24", "lo");
  ioctl($ctl, 0x8913, $ifr) or fail("SIOCGIFFLAGS: $!");
  ioctl($ctl, 0x8914, pack("Z16 s x22", "lo", unpack("x16 s", $ifr) | 1)) or fail("SIOCSIFFLAGS: $!");
  close $ctl;
  # Connecting needs write permission on the socket: it becomes the sandbox root's (in-namespace 0).
  lchown_($mapIds, $sock) or fail("chown the egress socket: $!");
}
if ($mapIds) {
  own("$root/$_") for qw(workspace home tmp);
  # This process stays host root and the pid namespace's init: it writes the step side's id maps,
  # reaps orphans, and exits with the step's status (taking the namespace along). It never changes
  # its credentials, so the parent-death signal unshare gave it survives (a uid change clears it).
  pipe(my $r1, my $w1) or fail("pipe: $!");
  pipe(my $r2, my $w2) or fail("pipe: $!");
  my $pid = fork() // fail("fork: $!");
  if ($pid) {
    close $w1; close $r2;
    sysread($r1, my $b, 1) == 1 or fail("the step side did not reach its user namespace");
    for my $map ("uid_map", "gid_map") {
      open(my $m, ">", "/proc/$pid/$map") or fail("/proc/$pid/$map: $!");
      print $m "0 $mapIds 65536\n" or fail("write $map: $!");
      close $m or fail("write $map: $!");
    }
    syswrite($w2, "g"); close $w2;
    # Never the step's environment in a process that stays host root.
    syscall($SYS_close, ${STEP_ENV_FD});
    $SIG{$_} = "IGNORE" for qw(INT TERM HUP QUIT USR1 USR2 PIPE);
    while (1) {
      my $w = waitpid(-1, 0);
      fail("waitpid: $!") if $w < 0;
      exit(($? & 127) ? 128 + ($? & 127) : $? >> 8) if $w == $pid;
    }
  }
  close $r1; close $w2;
  syscall($SYS_unshare, 0x10000000 | 0x20000) == 0 or fail("unshare user+mount: $!");
  syswrite($w1, "u"); close $w1;
  sysread($r2, my $b, 1) == 1 or fail("no id map for the step's user namespace");
  syscall($SYS_setresgid, 0, 0, 0) == 0 or fail("setresgid: $!");
  syscall($SYS_setresuid, 0, 0, 0) == 0 or fail("setresuid: $!");
}
my $N = "/tmp";
mnt("kiln-root", $N, "tmpfs", $NOSUID | $NODEV, "mode=0755,size=16m", "cannot mount the root tmpfs");
my $uid = $mapIds ? ${SANDBOX_STEP_ID} : 0;
sub put { open(my $f, ">", $_[0]) or fail("$_[0]: $!"); print $f $_[1]; close $f }
my @chain = grep { $_ ne "" } split m{/}, "$work/$id";
my $tmpHome = (grep { index("$work/", "$_/") == 0 } "/tmp", "/var/tmp")[0];
if (defined $imageTree) { image_root(); } else { host_root(); }
sub host_root {
  for my $d (qw(usr bin sbin lib lib32 lib64 libx32 opt)) {
    if (-l "/$d") { symlink(readlink("/$d"), "$N/$d") or fail("symlink /$d: $!"); next; }
    next unless -d "/$d";
    mkdir("$N/$d") or fail("mkdir $d: $!");
    mnt("/$d", "$N/$d", 0, $BIND | $REC, 0, "cannot bind /$d");
  }
  mkdir("$N/$_") or fail("mkdir $_: $!") for qw(etc dev proc tmp var var/tmp run home);
  my %deny = map { $_ => 1 } qw(shadow shadow- gshadow gshadow- passwd passwd- group group- subuid subuid- subgid subgid- sudoers sudoers.d security ssh machine-id);
  opendir(my $etc, "/etc") or fail("/etc: $!");
  for my $e (readdir $etc) {
    next if $e eq "." || $e eq ".." || $deny{$e};
    my @st = lstat("/etc/$e") or next;
    if (-l _) { symlink(readlink("/etc/$e"), "$N/etc/$e"); next; }
    next unless $st[2] & 4;  # not world-readable: root-only, never shown
    if (-d _) { mkdir("$N/etc/$e") or next; }
    elsif (-f _) { open(my $f, ">", "$N/etc/$e") or next; close $f; }
    else { next; }
    mnt("/etc/$e", "$N/etc/$e", 0, $BIND | $REC, 0, "cannot bind /etc/$e");
  }
  closedir $etc;
  put("$N/etc/passwd", "root:x:0:0:root:/root:/bin/sh\nkiln:x:$uid:$uid:kiln step:$root/home:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  put("$N/etc/group", "root:x:0:\nkiln:x:$uid:\nnogroup:x:65534:\n");
}
# Fills $dst (a directory on the root tmpfs) from the image directory $src: every entry a read-only
# bind (directories recursive), a symlink copied as a symlink (it resolves inside the new root), and
# the entries named in $tree left to the view: "own" (an empty directory the view mounts on),
# "skip" (absent), or a further tree (a directory filled the same way, one level down). Nothing is
# ever created inside the image: the rootfs is shared by every attempt that uses it. lstat only, so
# an image's symlink never leads the walk out of the image while the host's tree is still visible.
sub populate {
  my ($src, $dst, $tree) = @_;
  mkdir($dst) or $! == 17 or fail("mkdir $dst: $!");
  my @e;
  # An image directory the mapped root cannot list (a 0700 /root on the way to the work dir) is
  # left empty in the view: hidden, never a reason to fail the step.
  if (defined $src && opendir(my $d, $src)) {
    @e = grep { $_ ne "." && $_ ne ".." } readdir $d;
    closedir $d;
  }
  for my $e (@e) {
    my @st = lstat("$src/$e") or next;
    if (exists $tree->{$e}) {
      populate((-d _ && ref $tree->{$e}) ? "$src/$e" : undef, "$dst/$e", $tree->{$e}) if ref $tree->{$e};
      next;
    }
    if (-l _) { symlink(readlink("$src/$e"), "$dst/$e") or fail("symlink $e: $!"); next; }
    if (-d _) { mkdir("$dst/$e") or fail("mkdir $dst/$e: $!"); }
    elsif (-f _) { open(my $f, ">", "$dst/$e") or fail("$dst/$e: $!"); close $f; }
    else { next; }
    mnt("$src/$e", "$dst/$e", 0, $BIND | $REC, 0, "cannot bind the image's $e");
  }
  for my $k (keys %$tree) {
    next if $tree->{$k} eq "skip";
    if (ref $tree->{$k}) { populate(undef, "$dst/$k", $tree->{$k}) unless -d "$dst/$k"; }
    else { mkdir("$dst/$k") or $! == 17 or fail("mkdir $dst/$k: $!"); }
  }
}
# The image's passwd/group (a regular file in a real /etc, at most 1 MiB) minus any entry for the
# step's name or id, plus the step's line. Never through a symlink: the host's tree is still visible.
sub image_ids {
  my ($name, $line, $default) = @_;
  my ($dir, $file) = ("$N/.kiln-image/etc", "$N/.kiln-image/etc/$name");
  my $text = "";
  if (-d $dir && !-l $dir && -f $file && !-l $file && open(my $f, "<", $file)) { read($f, $text, 1 << 20); close $f; }
  $text = $default if $text eq "";
  return $text if $uid == 0;
  my @keep = grep { my @f = split /:/, $_, -1; @f > 2 && $f[0] ne "kiln" && $f[2] ne "$uid" } split /\n/, $text;
  return join("\n", @keep, $line) . "\n";
}
sub image_root {
  my $I = "$N/.kiln-image";
  mkdir($I) or fail("mkdir $I: $!");
  attach($imageTree, $I, "cannot attach the job image");
  my %tree = (dev => "own", proc => "own", sys => "skip", tmp => "own", etc => { passwd => "skip", group => "skip" }, var => { tmp => "own" }, ".kiln-image" => "skip");
  unless ($tmpHome) {
    # The directories leading to the sandbox are the view's own, filled from the image around them.
    my $t = \%tree;
    for my $i (0 .. $#chain) {
      my $c = $chain[$i];
      if ($i == $#chain) { $t->{$c} = "own"; last; }
      $t->{$c} = {} unless ref $t->{$c};
      $t = $t->{$c};
    }
  }
  populate($I, $N, \%tree);
  put("$N/etc/passwd", image_ids("passwd", "kiln:x:$uid:$uid:kiln step:$root/home:/bin/sh", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"));
  put("$N/etc/group", image_ids("group", "kiln:x:$uid:", "root:x:0:\nnogroup:x:65534:\n"));
  syscall($SYS_umount2, $I, 2) == 0 or fail("cannot detach the image: $!");
  rmdir($I) or fail("rmdir $I: $!");
}
for my $n (qw(null zero full random urandom tty)) {
  next unless -c "/dev/$n";
  put("$N/dev/$n", "");
  mnt("/dev/$n", "$N/dev/$n", 0, $BIND, 0, "cannot bind /dev/$n");
}
mkdir("$N/dev/$_") or fail("mkdir dev/$_: $!") for qw(pts shm);
symlink($_->[0], "$N/dev/$_->[1]") for (["pts/ptmx", "ptmx"], ["/proc/self/fd", "fd"], ["/proc/self/fd/0", "stdin"], ["/proc/self/fd/1", "stdout"], ["/proc/self/fd/2", "stderr"]);
my $mkchain = sub { my $p = $N; for (@chain) { $p .= "/$_"; mkdir($p) or $! == 17 or fail("mkdir $p: $!"); } };
$mkchain->() unless $tmpHome;
# One call: everything built so far read-only and nosuid (not nodev: /dev's nodes are binds in it).
syscall($SYS_mount_setattr, -100, $N, 0x8000, pack("QQQQ", $RDONLY | $NOSUID, 0, 0, 0), 32) == 0 or fail("cannot make the root read-only: $!");
for my $t ("/tmp", "/var/tmp") {
  if (defined $tmpHome && $t eq $tmpHome) { mnt("kiln-tmp", "$N$t", "tmpfs", $NOSUID | $NODEV, "mode=1777,size=1g", "cannot mount a private $t"); }
  else { attach(shift(@tmpTrees), "$N$t", "cannot bind the sandbox tmp on $t"); }
}
$mkchain->() if $tmpHome;
attach($rootTree, "$N$work/$id", "cannot bind the sandbox");
for my $w ("$N$work/$id", "$N/tmp", "$N/var/tmp") {
  syscall($SYS_mount_setattr, -100, $w, 0x8000, pack("QQQQ", $NOSUID | $NODEV, 0, 0, 0), 32) == 0 or fail("nosuid on $w: $!");
}
attach($sockTree, "$N$work/$id/${EGRESS_SOCKET_IN_ROOT}", "cannot bind the egress socket") if defined $sockTree;
mnt("/proc", "$N/proc", 0, $BIND | $REC, 0, "cannot bind /proc");
mnt("kiln-pts", "$N/dev/pts", "devpts", $NOSUID | $NOEXEC, "newinstance,ptmxmode=0666,mode=0620", "cannot mount devpts");
mnt("kiln-shm", "$N/dev/shm", "tmpfs", $NOSUID | $NODEV, "mode=1777,size=64m", "cannot mount /dev/shm");
syscall($SYS_close, $_) for @tmpTrees;
chdir($N) or fail("chdir: $!");
my $dot = ".";
syscall($SYS_pivot_root, $dot, $dot) == 0 or fail("pivot_root: $!");
syscall($SYS_umount2, $dot, 2) == 0 or fail("cannot detach the host tree: $!");
chdir("/") or fail("chdir /: $!");
# RLIMIT_CORE 4, RLIMIT_FSIZE 1, RLIMIT_DATA 2, RLIMIT_NPROC 6: soft = hard, so a step cannot raise them.
for ([4, 0], [1, $fsize], [2, $data], [6, $nproc]) {
  syscall($SYS_prlimit, 0, $_->[0], pack("QQ", $_->[1], $_->[1]), 0) == 0 or fail("prlimit $_->[0]: $!");
}
# "step": drop every privilege, apply the step's environment, exec its shell (step-exec.ts).
# "forward": first fork the egress forwarder from this process (egress-forwarder.ts), still with its
# fixed environment. Nothing is exec'd from the new root but the step's own shell (the image's).
forwarder_start("step", shift @rest) if $then eq "forward";
$then eq "step" || $then eq "forward" or fail("unknown continuation $then");
step_exec($arch, $mapIds ? ${SANDBOX_STEP_ID} : "", $rest[0], $rest[1], read_step_env());
${STEP_EXEC_PERL}
${FORWARD_PERL}`;

const PERL_ARCH: Partial<Record<NodeJS.Architecture, string>> = { x64: "x86_64", arm64: "aarch64" };

export interface PrivateViewSpec {
  /** The sandbox root (<workDir>/<attempt>). */
  root: string;
  workDir: string;
  /** The attempt's egress socket, when a forwarder inside the step's namespace must reach it. */
  egressSocket: string | null;
  /** True for a root agent: the view creates the step's user namespace and maps its ids. */
  mapIds: boolean;
  limits: SandboxLimits;
  /** perl-base (Essential on Debian): one process makes every mount, no exec per mount. */
  perl: string;
  /**
   * The job image's verified, unpacked rootfs (images/prepare-image.ts): the step's root is built
   * from it. null: the host's read-only system directories (a pool that declared `host`).
   */
  imageRoot: string | null;
}

/**
 * What the view runs once it is set up: the step (privileges dropped and its environment applied by
 * step-exec.ts), behind an egress forwarder the view forks first when `forwardTo` names the
 * attempt's socket as the step's root shows it (an unprivileged agent, or a host without nsenter).
 */
export interface ViewContinuation {
  cwd: string;
  command: string;
  forwardTo?: string;
}

/** argv that sets the view up inside the step's (already unshared) namespaces, then continues. */
export function privateViewArgv(spec: PrivateViewSpec, then: ViewContinuation): string[] {
  if (path.dirname(spec.root) !== spec.workDir)
    throw new Error(`sandbox root ${spec.root} is not directly under ${spec.workDir}`);
  return [
    spec.perl,
    "-e",
    VIEW_SCRIPT,
    PERL_ARCH[process.arch] ?? process.arch,
    spec.root,
    spec.workDir,
    spec.egressSocket ?? "",
    spec.imageRoot ?? "",
    spec.mapIds ? String(SANDBOX_HOST_ID_BASE) : "",
    String(spec.limits.processes),
    String(spec.limits.fileSizeBytes),
    String(spec.limits.dataBytes),
    ...(then.forwardTo ? ["forward", then.forwardTo] : ["step"]),
    then.cwd,
    then.command,
  ];
}
