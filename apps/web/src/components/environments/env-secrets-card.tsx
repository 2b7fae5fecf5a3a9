"use client";
import { Button, Card, EmptyState, Field, Form, StatusGate } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { serverError, ServerErrorInline } from "./server-error.tsx";

/** The environment's secrets: names and versions only; a value is written, never read back. */
export function EnvSecretsCard({ org, environmentId }: { org: string; environmentId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const q = useQuery({ ...trpc.deployments.secrets.queryOptions({ org, environmentId }), refetchInterval: 10_000 });
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  const refresh = () =>
    queryClient.invalidateQueries({ queryKey: trpc.deployments.secrets.queryKey({ org, environmentId }) });
  const set = useMutation(
    trpc.deployments.setSecret.mutationOptions({
      onMutate: () => setError(null),
      onSuccess: refresh,
      onError: (e) => setError(serverError(e)),
    }),
  );
  const del = useMutation(
    trpc.deployments.deleteSecret.mutationOptions({
      onMutate: () => setError(null),
      onSuccess: refresh,
      onError: (e) => setError(serverError(e)),
    }),
  );
  const onSubmit = (fd: FormData, form: HTMLFormElement) => {
    set.mutate(
      { org, environmentId, name: String(fd.get("name") ?? "").trim(), value: String(fd.get("value") ?? "") },
      { onSuccess: () => form.reset() },
    );
  };
  return (
    <Card title="Environment secrets" id="env-secrets">
      <StatusGate
        pending={q.isPending}
        error={q.error}
        loadingLabel="Loading secrets"
        loadingRows={2}
        renderError={(e) => <QueryError error={e} what="Secrets" onRetry={() => void q.refetch()} />}
        empty={
          q.data?.length === 0 ? (
            <EmptyState title="No environment secrets">Only this environment's deploy runs receive them.</EmptyState>
          ) : undefined
        }
      >
        {() => (
          <ul className="divide-y divide-zinc-100 text-sm dark:divide-zinc-800" data-testid="env-secrets">
            {(q.data ?? []).map((s) => (
              <li key={s.name} className="flex items-center gap-3 py-2" data-secret={s.name}>
                <code className="font-mono text-xs">{s.name}</code>
                <span className="text-zinc-500">
                  version {s.version}, by {s.updated_by}
                </span>
                <Button
                  size="sm"
                  variant="danger"
                  className="ml-auto"
                  aria-label={`Delete secret ${s.name}`}
                  disabled={del.isPending}
                  onClick={() => del.mutate({ org, environmentId, name: s.name })}
                >
                  Delete
                </Button>
              </li>
            ))}
          </ul>
        )}
      </StatusGate>
      <Form
        label="Set a secret"
        className="mt-3"
        onSubmit={onSubmit}
        pending={set.isPending}
        submitLabel="Set secret"
        pendingLabel="Saving…"
        submitVariant="secondary"
        error={error ? <ServerErrorInline error={error} /> : null}
      >
        <Field label="Secret name" name="name" placeholder="DEPLOY_KEY" autoComplete="off" spellCheck={false} />
        <Field
          label="Secret value"
          name="value"
          type="password"
          autoComplete="new-password"
          className="min-w-64 flex-1"
        />
      </Form>
    </Card>
  );
}
