"use client";
import { Button, Card, Field, inputClasses } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRef, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { serverError, ServerErrorText } from "./server-error.tsx";

/** Admins create an environment: repository, name, the environment it comes after, production flag. */
export function NewEnvironmentForm({ org }: { org: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const formRef = useRef<HTMLFormElement>(null);
  const repos = useQuery(trpc.runs.repos.queryOptions({ org }));
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  const [created, setCreated] = useState<string | null>(null);
  const create = useMutation(
    trpc.environments.create.mutationOptions({
      onMutate: () => {
        setError(null);
        setCreated(null);
      },
      onSuccess: async (env) => {
        formRef.current?.reset();
        setCreated(env.name);
        await queryClient.invalidateQueries({ queryKey: trpc.environments.list.queryKey({ org }) });
      },
      onError: (e) => setError(serverError(e)),
    }),
  );
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const get = (k: string) => String(fd.get(k) ?? "").trim();
    if (!get("repoId")) return setError({ code: "REQUEST.INVALID", message: "choose a repository" });
    if (!get("name")) return setError({ code: "REQUEST.INVALID", message: "enter a name" });
    create.mutate({
      org,
      repoId: get("repoId"),
      name: get("name"),
      after: get("after") || undefined,
      production: fd.get("production") === "on",
    });
  };
  return (
    <Card title="New environment" id="new-environment">
      <form ref={formRef} noValidate onSubmit={onSubmit} aria-label="New environment" className="space-y-3">
        <div className="grid gap-3 sm:grid-cols-3">
          <div className="flex flex-col gap-1">
            <label htmlFor="new-env-repo" className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
              Repository
            </label>
            <select id="new-env-repo" name="repoId" className={inputClasses} disabled={repos.isPending}>
              {repos.isPending ? <option value="">Loading repositories…</option> : null}
              {repos.data?.length === 0 ? <option value="">No repositories connected</option> : null}
              {repos.data?.map((r) => (
                <option key={r.id} value={r.id}>
                  {r.full_name}
                </option>
              ))}
            </select>
            {repos.isError ? (
              <span role="alert" className="text-xs text-red-700 dark:text-red-400">
                {repos.error.message}
              </span>
            ) : null}
          </div>
          <Field label="Name" name="name" placeholder="staging" autoComplete="off" spellCheck={false} maxLength={63} />
          <Field
            label="After"
            name="after"
            placeholder="(none)"
            hint="The environment an artifact must reach first"
            autoComplete="off"
            spellCheck={false}
            maxLength={63}
          />
        </div>
        <label className="flex items-center gap-2 text-sm">
          <input type="checkbox" name="production" className="h-4 w-4" />
          Production (fails closed)
        </label>
        <Button type="submit" disabled={create.isPending || repos.isPending}>
          {create.isPending ? "Creating…" : "Create environment"}
        </Button>
        {error ? <ServerErrorText error={error} /> : null}
        {created ? (
          <p role="status" className="text-sm text-emerald-700 dark:text-emerald-400">
            Created {created}.
          </p>
        ) : null}
      </form>
    </Card>
  );
}
