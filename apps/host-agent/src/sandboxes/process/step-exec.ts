// The last link of every namespaced step's wrapper chain (docs/adr/0019, issue 28): the only code
// that ever sees the step's environment. Every process before it (setpriv --pdeathsig, nsenter,
// unshare, the view's Perl, the egress forwarder) runs with WRAPPER_ENV and cwd "/", so nothing a
// workflow's `env:`, a deploy variable or a secret name says (LD_PRELOAD, PERL5OPT, PERL5DB,
// GLIBC_TUNABLES, ...) can steer a process that holds privilege. The step's variables travel on
// fd 3 (a pipe from the agent, never argv: /proc/<pid>/cmdline is world-readable on the host) and
// are applied here, after pivot_root and after every privilege is gone, by the exec of the step's
// shell itself. Perl reads its own steering variables (PERL5OPT, PERL5LIB, PERL5DB) only at start
// up, when the environment is still WRAPPER_ENV, and loads nothing after.
//
// The drop, in order: no supplementary groups (root agent; an unprivileged agent's user namespace
// denies setgroups), an empty bounding set (PR_CAPBSET_DROP for every capability the kernel
// knows), no ambient capabilities, the step's uid/gid (root agent: a uid change from 0 clears
// permitted and effective), empty effective/permitted/inheritable sets (capset), no_new_privs.
// It then reads /proc/self/status back and refuses to run the step if any set is not empty.
// This replaces util-linux setpriv in the chain: one exec less per step.

/** The whole environment of every wrapper process: nothing of the job's, nothing of the agent's. */
export const WRAPPER_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
});

/** fd the agent writes the step's environment to (NAME=VALUE, each ended by NUL). */
export const STEP_ENV_FD = 3;

/**
 * Perl subs `read_step_env()` and `step_exec($arch, $ids, $cwd, $cmd, $env)`, for inclusion in a script
 * that already `use strict; use warnings;`. `$ids` is the step's uid/gid ("" keeps the namespace's
 * root, for an unprivileged agent).
 */
export const STEP_EXEC_PERL = String.raw`
sub step_fail { print STDERR "kiln: step exec: @_\n"; exit 125 }
sub read_step_env {
  open(my $f, "<&=", ${STEP_ENV_FD}) or step_fail("no environment pipe: $!");
  local $/; my $blob = <$f>; close $f;
  return $blob // "";
}
sub step_exec {
  my ($arch, $ids, $cwd, $cmd, $blob) = @_;
  my %sc = (x86_64 => [157, 126, 116, 117, 119], aarch64 => [167, 91, 159, 147, 149]);
  my ($prctl, $capset, $setgroups, $setresuid, $setresgid) = @{$sc{$arch} // step_fail("no syscall numbers for $arch")};
  # Perl's syscall passes a string as a pointer: an id read from @ARGV must be made a number first.
  $ids = 0 + $ids if $ids ne "";
  if ($ids ne "") { syscall($setgroups, 0, 0) == 0 or step_fail("setgroups: $!"); }
  # PR_CAPBSET_READ (23) fails past the last capability the kernel knows; PR_CAPBSET_DROP is 24.
  for (my $c = 0; syscall($prctl, 23, $c, 0, 0, 0) >= 0; $c++) {
    syscall($prctl, 24, $c, 0, 0, 0) == 0 or step_fail("drop capability $c from the bounding set: $!");
  }
  # PR_CAP_AMBIENT (47), PR_CAP_AMBIENT_CLEAR_ALL (4); EINVAL: a kernel without ambient sets.
  syscall($prctl, 47, 4, 0, 0, 0) == 0 or $! == 22 or step_fail("clear ambient capabilities: $!");
  if ($ids ne "") {
    syscall($setresgid, $ids, $ids, $ids) == 0 or step_fail("setresgid: $!");
    syscall($setresuid, $ids, $ids, $ids) == 0 or step_fail("setresuid: $!");
  }
  # _LINUX_CAPABILITY_VERSION_3, this process; effective, permitted, inheritable all empty (2 words).
  my $hdr = pack("LL", 0x20080522, 0);
  my $data = pack("L6", 0, 0, 0, 0, 0, 0);
  syscall($capset, $hdr, $data) == 0 or step_fail("capset: $!");
  syscall($prctl, 38, 1, 0, 0, 0) == 0 or step_fail("no_new_privs: $!");
  open(my $st, "<", "/proc/self/status") or step_fail("/proc/self/status: $!");
  my %seen;
  while (my $l = <$st>) {
    if ($l =~ /^(CapInh|CapPrm|CapEff|CapBnd|CapAmb):\s*([0-9a-f]+)/) { step_fail("$1 is $2 after the drop") if $2 =~ /[^0]/; $seen{$1} = 1; }
    if ($l =~ /^NoNewPrivs:\s*(\d)/) { step_fail("no_new_privs did not stick") unless $1 == 1; $seen{NoNewPrivs} = 1; }
  }
  close $st;
  step_fail("cannot read back the capability sets") unless keys(%seen) >= 5;
  chdir($cwd) or step_fail("cannot enter $cwd: $!");
  %ENV = ();
  for my $kv (split /\0/, $blob) {
    my $i = index($kv, "=");
    step_fail("malformed environment entry") if $i < 1;
    $ENV{substr($kv, 0, $i)} = substr($kv, $i + 1);
  }
  exec { "/bin/sh" } "/bin/sh", "-c", $cmd or step_fail("exec /bin/sh: $!");
}
`;

/** NAME=VALUE\0... for STEP_ENV_FD; names were validated at parse time, checked again here. */
export function encodeStepEnv(env: Record<string, string>): Buffer {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new Error(`invalid environment variable name ${JSON.stringify(name)}`);
    if (value.includes("\0")) throw new Error(`environment variable ${name} contains a NUL byte`);
    parts.push(`${name}=${value}\0`);
  }
  return Buffer.from(parts.join(""), "utf8");
}
