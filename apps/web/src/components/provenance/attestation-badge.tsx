import { cn } from "@kiln/ui";

const STYLE: Record<string, { label: string; cls: string; title: string }> = {
  pending: {
    label: "signing",
    cls: "bg-zinc-100 text-zinc-700 dark:bg-zinc-800 dark:text-zinc-300",
    title: "the attestor has not signed it yet (seconds)",
  },
  logged: {
    label: "logged",
    cls: "bg-blue-50 text-blue-800 dark:bg-blue-950 dark:text-blue-200",
    title: "signed and in the transparency log; the verifier has not re-checked the bytes yet",
  },
  verified: {
    label: "verified",
    cls: "bg-emerald-50 text-emerald-800 dark:bg-emerald-950 dark:text-emerald-200",
    title: "signed, logged, and the stored bytes match the signed digest",
  },
  quarantined: {
    label: "quarantined",
    cls: "bg-red-50 text-red-800 dark:bg-red-950 dark:text-red-200",
    title: "the stored bytes do not match the signed provenance: downloads are refused",
  },
  none: {
    label: "none",
    cls: "bg-zinc-100 text-zinc-500 dark:bg-zinc-800 dark:text-zinc-400",
    title: "no attestation",
  },
};

/** An artifact's attestation state (issue 17), in words and colour, with the reason on hover. */
export function AttestationBadge({ state }: { state: string }) {
  const s = STYLE[state] ?? STYLE.none!;
  return (
    <span
      data-testid="attestation-state"
      data-state={state}
      title={s.title}
      className={cn("inline-flex rounded px-1.5 py-0.5 text-xs font-medium", s.cls)}
    >
      {s.label}
    </span>
  );
}

/** A pass/fail line of the server-side verification. */
export function Check({ ok, children, testId }: { ok: boolean; children: React.ReactNode; testId: string }) {
  return (
    <li className="flex items-start gap-2 text-sm" data-testid={testId} data-ok={ok ? "true" : "false"}>
      <span aria-hidden className={ok ? "text-emerald-600" : "text-red-600"}>
        {ok ? "✓" : "✗"}
      </span>
      <span>
        <span className="sr-only">{ok ? "passed: " : "failed: "}</span>
        {children}
      </span>
    </li>
  );
}
