"use client";
import { Card, Field, Form, SelectField } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { serverError, ServerErrorInline } from "./server-error.tsx";

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
  const onSubmit = (fd: FormData) => {
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
      <Form
        label="New environment"
        layout="grid"
        formRef={formRef}
        onSubmit={onSubmit}
        pending={create.isPending}
        // Until the repositories are loaded there is nothing to choose (the select is disabled too).
        disabled={repos.isPending}
        submitLabel="Create environment"
        pendingLabel="Creating…"
        error={error ? <ServerErrorInline error={error} /> : null}
        note={created ? `Created ${created}.` : null}
        footer={
          <label className="mt-3 flex items-center gap-2 text-sm">
            <input type="checkbox" name="production" className="h-4 w-4" />
            Production (fails closed)
          </label>
        }
      >
        <SelectField
          label="Repository"
          name="repoId"
          disabled={repos.isPending}
          error={repos.isError ? repos.error.message : null}
        >
          {repos.isPending ? <option value="">Loading repositories…</option> : null}
          {repos.data?.length === 0 ? <option value="">No repositories connected</option> : null}
          {repos.data?.map((r) => (
            <option key={r.id} value={r.id}>
              {r.full_name}
            </option>
          ))}
        </SelectField>
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
      </Form>
    </Card>
  );
}
