import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const git = promisify(execFile);

const WORKFLOW = `version: 1
jobs:
  - name: build
    steps:
      - echo "building $KILN_JOB_NAME (attempt $KILN_ATTEMPT)"
      - ls -la
  - name: test
    steps:
      - echo "running tests"
      - test -f README.md
`;

/** A local git repository with a workflow, served over file:// for the demo org. */
export async function createDemoRepo(dir: string): Promise<{ cloneUrl: string; commitSha: string }> {
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: "kiln",
    GIT_AUTHOR_EMAIL: "kiln@localhost",
    GIT_COMMITTER_NAME: "kiln",
    GIT_COMMITTER_EMAIL: "kiln@localhost",
  };
  if (!existsSync(path.join(dir, ".git"))) {
    await mkdir(path.join(dir, ".kiln"), { recursive: true });
    await writeFile(path.join(dir, ".kiln/workflow.yaml"), WORKFLOW);
    await writeFile(
      path.join(dir, "README.md"),
      "# demo app\n\nA repository created by `npm run up` for the demo org.\n",
    );
    await git("git", ["init", "-q", "-b", "main"], { cwd: dir, env });
    await git("git", ["add", "-A"], { cwd: dir, env });
    await git("git", ["commit", "-q", "-m", "demo workflow"], { cwd: dir, env });
  }
  const { stdout } = await git("git", ["rev-parse", "HEAD"], { cwd: dir, env });
  return { cloneUrl: `file://${dir}`, commitSha: stdout.trim() };
}
