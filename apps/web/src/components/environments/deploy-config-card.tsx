"use client";
import { Button, Card, EmptyState, Field, LoadingBlock } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { EnvSecretsCard } from "./env-secrets-card.tsx";
import { serverError, ServerErrorText } from "./server-error.tsx";

type Err = { code: string; message: string } | null;

/**
 * Deploy configuration (admins): the deploy workflow read at the promoted artifact's commit and the
 * plain variables its runs get; the environment's secrets are a card of their own (names only).
 */
export function DeployConfigCard({ org, environmentId }: { org: string; environmentId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const key = trpc.deployments.config.queryKey({ org, environmentId });
  const q = useQuery({ ...trpc.deployments.config.queryOptions({ org, environmentId }), refetchInterval: 10_000 });
  const [pathError, setPathError] = useState<Err>(null);
  const [varError, setVarError] = useState<Err>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: key });
  const setConfig = useMutation(
    trpc.deployments.setConfig.mutationOptions({
      onMutate: () => setPathError(null),
      onSuccess: refresh,
      onError: (e) => setPathError(serverError(e)),
    }),
  );
  const setVariable = useMutation(
    trpc.deployments.setVariable.mutationOptions({
      onMutate: () => setVarError(null),
      onSuccess: refresh,
      onError: (e) => setVarError(serverError(e)),
    }),
  );
  const deleteVariable = useMutation(
    trpc.deployments.deleteVariable.mutationOptions({
      onMutate: () => setVarError(null),
      onSuccess: refresh,
      onError: (e) => setVarError(serverError(e)),
    }),
  );
  if (q.isPending) return <LoadingBlock label="Loading the deploy configuration" rows={3} />;
  if (q.isError) return <QueryError error={q.error} what="Deploy configuration" onRetry={() => void q.refetch()} />;
  const c = q.data;
  const onPath = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const artifact = String(fd.get("artifact_path") ?? "").trim();
    setConfig.mutate({
      org,
      environmentId,
      config: { workflow_path: String(fd.get("workflow_path") ?? "").trim(), artifact_path: artifact || null },
    });
  };
  const onVariable = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const fd = new FormData(form);
    setVariable.mutate(
      { org, environmentId, name: String(fd.get("name") ?? "").trim(), value: String(fd.get("value") ?? "") },
      { onSuccess: () => form.reset() },
    );
  };
  return (
    <>
      <Card title="Deploy configuration" id="deploy-config">
        <form noValidate onSubmit={onPath} aria-label="Deploy workflow" className="space-y-3">
          <div className="grid gap-3 sm:grid-cols-2">
            <Field
              key={`w:${c.workflow_path ?? ""}`}
              label="Deploy workflow path"
              name="workflow_path"
              defaultValue={c.workflow_path ?? ""}
              placeholder=".kiln/deploy.yaml"
              spellCheck={false}
            />
            <Field
              key={`a:${c.artifact_path ?? ""}`}
              label="Artifact path"
              name="artifact_path"
              defaultValue={c.artifact_path ?? ""}
              placeholder=".kiln/promoted/<name>"
              spellCheck={false}
            />
          </div>
          <Button type="submit" disabled={setConfig.isPending}>
            {setConfig.isPending ? "Saving…" : "Save deploy workflow"}
          </Button>
          {pathError ? <ServerErrorText error={pathError} /> : null}
          {c.workflow_path === null ? (
            <p className="text-sm text-amber-800 dark:text-amber-300">
              No deploy workflow yet: promotions move the pointer only.
            </p>
          ) : null}
        </form>
        <h3 className="mt-6 mb-2 text-sm font-semibold">Variables</h3>
        {c.variables.length === 0 ? (
          <EmptyState title="No variables">Variables are given to each deploy run of this environment.</EmptyState>
        ) : (
          <table className="w-full text-left text-sm" data-testid="env-variables">
            <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
              <tr>
                <th scope="col" className="py-2 pr-4 font-medium">
                  Name
                </th>
                <th scope="col" className="py-2 pr-4 font-medium">
                  Value
                </th>
                <th scope="col" className="py-2 pr-4 font-medium">
                  Set by
                </th>
                <th scope="col" className="py-2 font-medium">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {c.variables.map((v) => (
                <tr key={v.name} data-variable={v.name}>
                  <td className="py-2 pr-4 font-mono text-xs">{v.name}</td>
                  <td className="py-2 pr-4 font-mono text-xs break-all">{v.value}</td>
                  <td className="py-2 pr-4 text-zinc-500">{v.updated_by}</td>
                  <td className="py-2 text-right">
                    <Button
                      size="sm"
                      variant="danger"
                      aria-label={`Delete variable ${v.name}`}
                      disabled={deleteVariable.isPending}
                      onClick={() => deleteVariable.mutate({ org, environmentId, name: v.name })}
                    >
                      Delete
                    </Button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <form
          noValidate
          onSubmit={onVariable}
          aria-label="Set a variable"
          className="mt-3 flex flex-wrap items-end gap-2"
        >
          <Field label="Variable name" name="name" placeholder="API_URL" autoComplete="off" spellCheck={false} />
          <Field
            label="Variable value"
            name="value"
            autoComplete="off"
            spellCheck={false}
            className="min-w-64 flex-1"
          />
          <Button type="submit" disabled={setVariable.isPending}>
            {setVariable.isPending ? "Saving…" : "Set variable"}
          </Button>
        </form>
        {varError ? <ServerErrorText error={varError} /> : null}
      </Card>
      <EnvSecretsCard org={org} environmentId={environmentId} />
    </>
  );
}
