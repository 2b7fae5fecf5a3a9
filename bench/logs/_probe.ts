import { execSync } from "node:child_process";
import { LogBenchStack } from "./stack.ts";
import { benchIngest } from "./ingest.ts";
const s = new LogBenchStack();
try {
  await s.start({ KILN_LEASE_TTL_MS: "600000", KILN_LOG_MAX_BYTES: String(2 ** 40), KILN_LOG_JOURNAL_MAX_BYTES: String(2 ** 40), NODE_OPTIONS: "--cpu-prof --cpu-prof-dir=/tmp/prof" });
  console.log(JSON.stringify(await benchIngest(s, { rounds: 1, seconds: 10, writers: 8 })));
  const port = new URL(s.stack.base).port;
  const pid = execSync(`ss -ltnp | grep 127.0.0.1:${port} | sed -E 's/.*pid=([0-9]+).*/\\1/'`).toString().trim();
  process.kill(Number(pid), "SIGTERM");
  await new Promise((r) => setTimeout(r, 5000));
} finally { await s.stop(); }
