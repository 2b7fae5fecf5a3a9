// The registered agent's state (issue 22, ADR 0034): the host credential and what it was registered
// as, in <state dir>/agent-state.json, mode 0600 in a 0700 directory. The credential lives only here:
// never in an environment variable, a log line or a step's environment.
import { chmod, mkdir, open, readFile, rename, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";

export const STATE_FILE = "agent-state.json";

const stateSchema = z
  .object({
    version: z.literal(1),
    control_url: z.url(),
    runner_id: z.string(),
    credential: z.string().min(1),
    org: z.string(),
    pool: z.string(),
    name: z.string(),
    labels: z.array(z.string()),
  })
  .strict();

export type AgentState = z.infer<typeof stateSchema>;

/** Written to a temporary file created 0600 and renamed over: a crash leaves the old state or the new one. */
export async function writeAgentState(dir: string, state: AgentState): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, STATE_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await open(tmp, "wx", 0o600);
  try {
    await fh.writeFile(`${JSON.stringify(stateSchema.parse(state), null, 2)}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  // The umask cannot widen 0600, but a pre-existing directory may be wider than 0700: narrow the file anyway.
  await chmod(tmp, 0o600);
  await rename(tmp, file);
  return file;
}

/** Reads the state; refuses a file others can read (a leaked credential is a host anyone can run). */
export async function readAgentState(dir: string): Promise<AgentState> {
  const file = path.join(dir, STATE_FILE);
  let st;
  try {
    st = await stat(file);
  } catch {
    throw new Error(`no registered agent in ${dir} (run: npm run agent -- register --state-dir ${dir} ...)`);
  }
  if ((st.mode & 0o077) !== 0)
    throw new Error(`${file} is readable by others (mode ${(st.mode & 0o777).toString(8)}): chmod 600 it`);
  const parsed = stateSchema.safeParse(JSON.parse(await readFile(file, "utf8")));
  if (!parsed.success) throw new Error(`${file} is not an agent state file: ${parsed.error.issues[0]?.message ?? ""}`);
  return parsed.data;
}
