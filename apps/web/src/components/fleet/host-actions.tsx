"use client";
import type { FleetHostData as FleetHost } from "../types.ts";
import { Button, ConfirmButton, inputClasses } from "@kiln/ui";
import { useState } from "react";
import type { FleetAction } from "./fleet-table.tsx";

/**
 * A host's actions. Drain and lifting a state act at once; quarantine asks for its reason (a
 * keyboard-reachable form; Escape cancels) and revoke for a confirmation first (ConfirmButton).
 */
export function HostActions({
  host,
  busy,
  onAction,
}: {
  host: FleetHost;
  busy: boolean;
  onAction: (a: FleetAction) => void;
}) {
  const [mode, setMode] = useState<"idle" | "quarantine">("idle");
  const [reason, setReason] = useState("");
  if (host.state === "revoked") return null;
  const id = host.id;
  const cancel = () => {
    setMode("idle");
    setReason("");
  };
  if (mode === "quarantine")
    return (
      <form
        className="inline-flex items-center gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          if (!reason.trim()) return;
          onAction({ kind: "quarantine", runnerId: id, reason: reason.trim() });
          cancel();
        }}
        onKeyDown={(e) => e.key === "Escape" && cancel()}
      >
        <label className="sr-only" htmlFor={`reason-${id}`}>
          Why quarantine {host.name}
        </label>
        <input
          id={`reason-${id}`}
          className={inputClasses}
          value={reason}
          onChange={(e) => setReason(e.target.value)}
          placeholder="reason (shown in the fleet view)"
          required
          maxLength={500}
          autoFocus
        />
        <Button size="sm" variant="danger" type="submit" disabled={busy || !reason.trim()}>
          Quarantine
        </Button>
        <Button size="sm" variant="ghost" onClick={cancel}>
          Cancel
        </Button>
      </form>
    );
  return (
    <span className="inline-flex flex-wrap justify-end gap-1" aria-label={`Actions for ${host.name}`} role="group">
      {host.state === "draining" ? (
        <Button size="sm" disabled={busy} onClick={() => onAction({ kind: "undrain", runnerId: id })}>
          Undrain
        </Button>
      ) : host.state !== "quarantined" ? (
        <Button size="sm" disabled={busy} onClick={() => onAction({ kind: "drain", runnerId: id })}>
          Drain
        </Button>
      ) : null}
      {host.state === "quarantined" ? (
        <Button size="sm" disabled={busy} onClick={() => onAction({ kind: "unquarantine", runnerId: id })}>
          Lift quarantine
        </Button>
      ) : (
        <Button size="sm" disabled={busy} onClick={() => setMode("quarantine")}>
          Quarantine
        </Button>
      )}
      {host.interruptible && host.state !== "offline" ? (
        <Button size="sm" disabled={busy} onClick={() => onAction({ kind: "reclaim", runnerId: id, pool: host.pool })}>
          Reclaim
        </Button>
      ) : null}
      <ConfirmButton
        label="Revoke"
        disabled={busy}
        title={`Revoke ${host.name}?`}
        confirmLabel={`Confirm revoke of ${host.name}`}
        cancelLabel="Cancel"
        onConfirm={async () => onAction({ kind: "revoke", runnerId: id })}
      >
        Its running jobs are retried elsewhere.
      </ConfirmButton>
    </span>
  );
}
