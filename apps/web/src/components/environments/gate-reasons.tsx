/** Each gate's answer as the decision service gave it: the gate, its status, code and message. */
export function GateReasons({
  reasons,
}: {
  reasons: { gate: string; status: string; code: string; message: string }[];
}) {
  if (reasons.length === 0) return <p className="text-sm text-zinc-500">No gate reasons recorded.</p>;
  return (
    <ul className="space-y-1 text-sm" aria-label="Gate reasons">
      {reasons.map((r) => (
        <li key={`${r.gate}:${r.code}`} className="flex flex-wrap gap-x-2" data-gate={r.gate} data-status={r.status}>
          <span className="font-medium">{r.gate}</span>
          <span
            className={
              r.status === "pass"
                ? "text-emerald-700 dark:text-emerald-400"
                : r.status === "fail"
                  ? "text-red-700 dark:text-red-400"
                  : "text-amber-800 dark:text-amber-300"
            }
          >
            {r.status}
          </span>
          <code className="font-mono text-xs text-zinc-500">{r.code}</code>
          <span className="text-zinc-700 dark:text-zinc-300">{r.message}</span>
        </li>
      ))}
    </ul>
  );
}
