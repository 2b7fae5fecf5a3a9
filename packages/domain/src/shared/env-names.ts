// Environment variable names that steer a loader or an interpreter before its first instruction
// (issue 28). The process driver already keeps a job's environment away from every privileged
// process (apps/host-agent/src/sandboxes/process/step-exec.ts); refusing these names where a job,
// an environment or a secret names a variable is defence in depth: if a future wrapper, tool or
// driver ever let the step's environment reach privileged code again, these would be the payload.
// A job that really needs one (LD_LIBRARY_PATH for a vendored library, say) sets it in its own
// step command (`export LD_LIBRARY_PATH=...`), where it reaches only that step.

/**
 * Exact names. Left out on purpose, because builds use them every day and no privileged process in
 * any driver is Node, Python, Java or Ruby: NODE_OPTIONS (--max-old-space-size), PYTHONPATH,
 * JAVA_TOOL_OPTIONS, RUBYOPT. The interpreter start-up hooks that only steer (PYTHONSTARTUP,
 * PYTHONHOME, PYTHONINSPECT) are in.
 */
const RESERVED = new Set([
  "GCONV_PATH",
  "LOCPATH",
  "GLIBC_TUNABLES",
  "HOSTALIASES",
  "NLSPATH",
  "RESOLV_HOST_CONF",
  "PERLLIB",
  "PERLIO",
  "PERLIO_DEBUG",
  "BASH_ENV",
  "ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "PS4",
  "PYTHONSTARTUP",
  "PYTHONHOME",
  "PYTHONINSPECT",
]);

/** Whole families: the dynamic loader (LD_*), glibc's malloc (MALLOC_*), Perl (PERL5*). */
const RESERVED_PREFIXES = ["LD_", "MALLOC_", "PERL5", "BASH_FUNC_"];

/** Why `name` may not be set by a job, an environment or a secret, or null when it may. */
export function reservedEnvNameProblem(name: string): string | null {
  const upper = name.toUpperCase();
  if (RESERVED.has(upper) || RESERVED_PREFIXES.some((p) => upper.startsWith(p)))
    return "steers a loader or an interpreter and is reserved (set it inside the step's command instead)";
  return null;
}
