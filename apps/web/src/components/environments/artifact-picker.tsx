"use client";
import { EmptyState, SelectField } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { useNow } from "../time.tsx";
import { artifactChoiceLabel } from "./artifact-choice.ts";

/**
 * The artifact to promote, chosen from the repo's recent attested artifacts (issue 29) instead of
 * typed as an id nobody can know. A native select: labelled, and keyboard-operable everywhere
 * (arrows, type-ahead) without a custom listbox to get wrong. Its value is the artifact id.
 */
export function ArtifactPicker({
  org,
  environmentId,
  error,
}: {
  org: string;
  environmentId: string;
  error?: string | null;
}) {
  const trpc = useTRPC();
  const now = useNow(60_000);
  const q = useQuery({ ...trpc.environments.artifacts.queryOptions({ org, environmentId }), refetchInterval: 30_000 });
  if (q.isError) return <QueryError error={q.error} what="Artifacts" onRetry={() => void q.refetch()} />;
  if (q.data?.length === 0)
    return (
      <EmptyState title="No attested artifacts yet">
        A successful run of this repo that publishes an artifact is attested, then offered here.
      </EmptyState>
    );
  return (
    <SelectField
      label="Artifact"
      name="artifactId"
      disabled={q.isPending}
      hint="Newest first: name (job) · commit · digest · age"
      error={error}
      data-testid="artifact-picker"
      selectClassName="font-mono text-xs"
    >
      {q.isPending ? <option value="">Loading artifacts…</option> : null}
      {(q.data ?? []).map((a) => (
        <option key={a.artifactId} value={a.artifactId}>
          {artifactChoiceLabel(a, now)}
        </option>
      ))}
    </SelectField>
  );
}
