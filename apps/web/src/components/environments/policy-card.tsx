"use client";
import { Button, Card } from "@kiln/ui";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { serverError, ServerErrorText } from "./server-error.tsx";

interface Policy {
  version: number;
  policy: unknown;
  createdBy: string;
  comment: string | null;
  createdAt: string;
}

/**
 * The gate policy in force (its version and JSON); admins edit it as a new version. The JSON is
 * parsed here only to send an object: the server validates the policy (POLICY.INVALID names each
 * problem's path) and its answer is shown as it came.
 */
export function PolicyCard({
  org,
  environmentId,
  policy,
  isAdmin,
}: {
  org: string;
  environmentId: string;
  policy: Policy;
  isAdmin: boolean;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const pretty = JSON.stringify(policy.policy, null, 2);
  const [draft, setDraft] = useState<string | null>(null);
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  const [saved, setSaved] = useState<number | null>(null);
  const save = useMutation(
    trpc.environments.setPolicy.mutationOptions({
      onMutate: () => {
        setError(null);
        setSaved(null);
      },
      onSuccess: async (v) => {
        setDraft(null);
        setSaved(v.version);
        await queryClient.invalidateQueries({ queryKey: trpc.environments.get.queryKey({ org, environmentId }) });
      },
      onError: (e) => setError(serverError(e)),
    }),
  );
  const onSave = () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(draft ?? pretty);
    } catch (e) {
      return setError({ code: "POLICY.INVALID", message: `not JSON: ${(e as Error).message}` });
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      return setError({ code: "POLICY.INVALID", message: "the policy is a JSON object" });
    save.mutate({ org, environmentId, policy: parsed as Record<string, unknown> });
  };
  return (
    <Card title={`Gate policy, version ${policy.version}`} id="policy">
      <p className="mb-2 text-sm text-zinc-600 dark:text-zinc-400" data-testid="policy-version">
        Version {policy.version} by {policy.createdBy}
        {policy.comment ? `: ${policy.comment}` : ""}
      </p>
      {isAdmin ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            onSave();
          }}
          aria-label="Edit the gate policy"
        >
          <label htmlFor={`policy-${environmentId}`} className="block text-xs font-medium">
            Policy (JSON)
          </label>
          <textarea
            id={`policy-${environmentId}`}
            name="policy"
            rows={Math.min(24, pretty.split("\n").length + 2)}
            spellCheck={false}
            value={draft ?? pretty}
            onChange={(e) => setDraft(e.target.value)}
            aria-invalid={error ? true : undefined}
            className="mt-1 w-full rounded-md border border-zinc-300 bg-white p-2 font-mono text-xs dark:border-zinc-700 dark:bg-zinc-950"
          />
          <div className="mt-2 flex gap-2">
            <Button type="submit" variant="primary" disabled={save.isPending || draft === null}>
              {save.isPending ? "Saving…" : "Save as new version"}
            </Button>
            {draft !== null ? (
              <Button
                type="button"
                variant="secondary"
                onClick={() => {
                  setDraft(null);
                  setError(null);
                }}
              >
                Discard changes
              </Button>
            ) : null}
          </div>
          {error ? <ServerErrorText error={error} /> : null}
          {saved !== null ? (
            <p role="status" className="mt-2 text-sm text-emerald-700 dark:text-emerald-400">
              Saved as version {saved}.
            </p>
          ) : null}
        </form>
      ) : (
        <pre className="overflow-x-auto rounded-md bg-zinc-50 p-2 font-mono text-xs dark:bg-zinc-900">{pretty}</pre>
      )}
    </Card>
  );
}
