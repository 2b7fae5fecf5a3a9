"use client";
import { Field, Form } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, type FormErrors } from "../settings/form-errors.ts";

export interface Connected {
  fullName: string;
  webhookSecret: string;
}

/** Connect a repository: name, clone URL, workflow path, default branch. Enter submits. */
export function ConnectRepoForm({ org, onConnected }: { org: string; onConnected: (c: Connected) => Promise<void> }) {
  const trpc = useTRPC();
  const formRef = useRef<HTMLFormElement>(null);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const connect = useMutation(
    trpc.repos.connect.mutationOptions({
      onMutate: () => setErrors(NO_ERRORS),
      onSuccess: async (r) => {
        formRef.current?.reset();
        await onConnected({ fullName: r.fullName, webhookSecret: r.webhookSecret });
      },
      onError: (e) => {
        const f = formErrorsOf(e);
        // The engine's refusals name their field: the clone-URL policy, the name's form.
        const code = e.data?.domainCode;
        if (f.message && code === "REPO.CLONE_URL_REFUSED")
          setErrors({ fields: { cloneUrl: f.message }, message: null });
        else if (f.message && /repo name|owner\/name|another org|already connected/.test(f.message))
          setErrors({ fields: { name: f.message }, message: null });
        else setErrors(f);
      },
    }),
  );
  const onSubmit = (fd: FormData) => {
    const get = (k: string) => String(fd.get(k) ?? "").trim();
    if (!get("name")) return setErrors({ fields: { name: "enter owner/name" }, message: null });
    if (!get("cloneUrl")) return setErrors({ fields: { cloneUrl: "enter the clone URL" }, message: null });
    connect.mutate({
      org,
      name: get("name"),
      cloneUrl: get("cloneUrl"),
      workflowPath: get("workflowPath") || ".kiln/workflow.yaml",
      defaultBranch: get("defaultBranch") || "main",
    });
  };
  return (
    <Form
      label="Connect a repository"
      title="Connect a repository"
      testId="connect-repo-form"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      formRef={formRef}
      onSubmit={onSubmit}
      pending={connect.isPending}
      submitLabel="Connect repository"
      pendingLabel="Connecting…"
      error={errors.message}
      layout="grid"
    >
      <Field
        label="Repository"
        name="name"
        placeholder="acme/app"
        autoComplete="off"
        spellCheck={false}
        error={errors.fields.name}
      />
      <Field
        label="Clone URL"
        name="cloneUrl"
        placeholder="https://github.com/acme/app.git"
        autoComplete="off"
        spellCheck={false}
        error={errors.fields.cloneUrl}
      />
      <Field
        label="Workflow path"
        name="workflowPath"
        defaultValue=".kiln/workflow.yaml"
        error={errors.fields.workflowPath}
      />
      <Field label="Default branch" name="defaultBranch" defaultValue="main" error={errors.fields.defaultBranch} />
    </Form>
  );
}
