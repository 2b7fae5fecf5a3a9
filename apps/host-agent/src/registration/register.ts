// `npm run agent -- register --url <control plane> --token <t> --pool <name> --labels a,b [--name n]
// [--state-dir d]`: exchanges a registration token for this host's credential and stores it in the
// state directory (issue 22). The token is spent by the exchange; a second use is refused.
import os from "node:os";
import { parseArgs } from "node:util";
import { AGENT_ENDPOINTS, AGENT_PROTOCOL_VERSION } from "@kiln/domain";
import { registerEnv } from "../env.ts";
import { AGENT_VERSION } from "../version.ts";
import { writeAgentState } from "./state-file.ts";

const USAGE =
  "usage: npm run agent -- register --url <control plane> --token <registration token> --pool <name> " +
  "[--labels a,b] [--name <name>] [--state-dir <dir> | KILN_AGENT_STATE_DIR]";

export async function register(argv: string[], out: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: "string" },
      token: { type: "string" },
      pool: { type: "string" },
      labels: { type: "string", default: "" },
      name: { type: "string" },
      "state-dir": { type: "string" },
    },
    strict: true,
  });
  const env = registerEnv();
  const stateDir = values["state-dir"] ?? env.stateDir;
  if (!values.url || !values.token || !values.pool || !stateDir) {
    out(USAGE);
    return 2;
  }
  const labels = values.labels
    .split(",")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const body = AGENT_ENDPOINTS.register.request.parse({
    pool: values.pool,
    name:
      values.name ??
      os
        .hostname()
        .replace(/[^A-Za-z0-9_.-]/g, "-")
        .slice(0, 100),
    labels,
    isolation: env.driver,
    protocol_version: AGENT_PROTOCOL_VERSION,
    agent_version: AGENT_VERSION,
  });
  const base = values.url.replace(/\/+$/, "");
  const res = await fetch(`${base}${AGENT_ENDPOINTS.register.path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${values.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (res.status !== 201) {
    let why = text.slice(0, 500);
    try {
      const e = JSON.parse(text) as { error?: { code?: string; message?: string } };
      if (e.error) why = `${e.error.code ?? ""}: ${e.error.message ?? ""}`;
    } catch {
      // not JSON: the raw text is the best description there is
    }
    out(`registration refused (${res.status}) ${why}`);
    return 1;
  }
  const r = AGENT_ENDPOINTS.register.response.parse(JSON.parse(text));
  const file = await writeAgentState(stateDir, {
    version: 1,
    control_url: base,
    runner_id: r.runner_id,
    credential: r.credential,
    org: r.org,
    pool: r.pool,
    name: r.name,
    labels: r.labels,
  });
  // Never the credential: only where it is.
  out(
    `registered runner ${r.runner_id} (${r.name}) in pool ${r.pool} of ${r.org}; credential stored in ${file} (0600)`,
  );
  out(`start it with: KILN_AGENT_STATE_DIR=${stateDir} npm run agent`);
  return 0;
}
