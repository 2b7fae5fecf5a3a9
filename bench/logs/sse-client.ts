// A real EventSource following a job's log, recording when each line arrived.
import { EventSource } from "eventsource";

export interface Followed {
  stdout: Buffer;
  ids: string[];
  terminal: string | null;
  /** For lines "t <unix ns> ...": arrival wall time minus write time, ms. */
  latenciesMs: number[];
}

export function followLog(base: string, jobId: string, token: string, timeoutMs = 300_000): Promise<Followed> {
  const out: Followed = { stdout: Buffer.alloc(0), ids: [], terminal: null, latenciesMs: [] };
  const parts: Buffer[] = [];
  let pending = "";
  const es = new EventSource(`${base}/v1/jobs/${jobId}/logs/events`, {
    fetch: (input, init) =>
      fetch(input, {
        ...init,
        headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${token}` },
      }),
  });
  es.addEventListener("message", (e) => {
    const now = Date.now();
    const m = JSON.parse(e.data) as { stream: string; data: string };
    out.ids.push(e.lastEventId);
    if (m.stream !== "stdout") return;
    const bytes = Buffer.from(m.data, "base64");
    parts.push(bytes);
    pending += bytes.toString("latin1");
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const ns = /^t (\d{19})/.exec(line)?.[1];
      if (ns) out.latenciesMs.push(now - Number(BigInt(ns) / 1_000_000n));
    }
  });
  for (const name of ["log.sealed", "log.truncated", "log.gapped"])
    es.addEventListener(name, () => (out.terminal = name));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      es.close();
      reject(new Error(`stream not finished after ${timeoutMs} ms`));
    }, timeoutMs);
    es.addEventListener("error", () => {
      if (es.readyState !== EventSource.CLOSED) return;
      clearTimeout(timer);
      out.stdout = Buffer.concat(parts);
      resolve(out);
    });
  });
}
