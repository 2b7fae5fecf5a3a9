"use client";
import { REGISTRATION_TOKEN_TTL, RUNNER_LABEL_PATTERN } from "@kiln/domain";
import { Button, Card, Field, Form, SelectField } from "@kiln/ui";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, numberOrNull, type FormErrors } from "../settings/form-errors.ts";
import { CopyButton } from "./copy-button.tsx";
import { serverError } from "./server-error.ts";

interface Issued {
  token: string;
  pool: string;
  expiresAt: string;
  singleUse: boolean;
  command: string;
}

/**
 * A registration token for one of the org's pools (runners.createRegistrationToken, admins): shown
 * once with the exact `npm run agent -- register` command. Only its hash is stored, so once this
 * panel is dismissed or the page left, the token cannot be shown again. Labels are the host's own
 * (the agent declares them when it registers); they go into the command, not into the token.
 */
export function RegistrationTokenCard({ org }: { org: string }) {
  const trpc = useTRPC();
  const pools = useQuery({ ...trpc.runners.pools.queryOptions({ org }), refetchInterval: 5_000 });
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [issued, setIssued] = useState<Issued | null>(null);
  const [labels, setLabels] = useState("");
  const create = useMutation(
    trpc.runners.createRegistrationToken.mutationOptions({
      onMutate: () => {
        setErrors(NO_ERRORS);
        setIssued(null);
      },
      onSuccess: (r) => {
        const args = ["npm run agent -- register", `--url ${window.location.origin}`, `--token ${r.token}`];
        args.push(`--pool ${r.pool}`);
        if (labels) args.push(`--labels ${labels}`);
        setIssued({ ...r, command: args.join(" ") });
        requestAnimationFrame(() => document.querySelector<HTMLElement>("#issued-token-heading")?.focus());
      },
      onError: (e) => {
        const f = formErrorsOf(e);
        setErrors(f.message ? { fields: {}, message: serverError(e) } : f);
      },
    }),
  );
  const onSubmit = (fd: FormData) => {
    const pool = String(fd.get("pool") ?? "");
    if (!pool) return setErrors({ fields: { pool: "choose a pool" }, message: null });
    const list = String(fd.get("labels") ?? "")
      .split(",")
      .map((l) => l.trim())
      .filter(Boolean);
    const bad = list.find((l) => !RUNNER_LABEL_PATTERN.test(l));
    if (bad) return setErrors({ fields: { labels: `label ${bad}: a-z 0-9 . _ - only` }, message: null });
    const minutes = numberOrNull(fd.get("expiresInMinutes"));
    if (minutes !== null && (!Number.isInteger(minutes) || minutes < 1 || minutes > REGISTRATION_TOKEN_TTL.maxMinutes))
      return setErrors({
        fields: { expiresInMinutes: `1 to ${REGISTRATION_TOKEN_TTL.maxMinutes} minutes` },
        message: null,
      });
    setLabels(list.join(","));
    create.mutate({
      org,
      pool,
      singleUse: fd.get("singleUse") === "on",
      ...(minutes !== null ? { expiresInMinutes: minutes } : {}),
    });
  };
  const poolNames = pools.data?.map((p) => p.name) ?? [];
  return (
    <Card title="Register a host" id="registration-tokens">
      <Form
        label="Create registration token"
        testId="token-form"
        onSubmit={onSubmit}
        pending={create.isPending}
        disabled={poolNames.length === 0}
        submitLabel="Create registration token"
        pendingLabel="Creating…"
        error={errors.message ? <span data-testid="token-error">{errors.message}</span> : null}
      >
        <SelectField
          label="Pool"
          name="pool"
          selectClassName="w-48"
          disabled={poolNames.length === 0}
          error={errors.fields.pool}
        >
          {poolNames.length === 0 ? (
            <option value="">{pools.isPending ? "Loading pools…" : "Create an org pool first"}</option>
          ) : (
            poolNames.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))
          )}
        </SelectField>
        <Field
          label="Labels"
          name="labels"
          autoComplete="off"
          spellCheck={false}
          placeholder="gpu,cuda12"
          hint="Comma-separated; the host declares them when it registers"
          error={errors.fields.labels}
        />
        <Field
          label="Expires in minutes"
          name="expiresInMinutes"
          inputMode="numeric"
          defaultValue={String(REGISTRATION_TOKEN_TTL.defaultMinutes)}
          hint={`At most ${REGISTRATION_TOKEN_TTL.maxMinutes} (7 days)`}
          error={errors.fields.expiresInMinutes}
          className="w-40"
        />
        <label className="mt-6 flex items-center gap-2 text-sm">
          <input type="checkbox" name="singleUse" defaultChecked />
          Single use
        </label>
      </Form>
      {issued ? (
        <section
          aria-labelledby="issued-token-heading"
          className="mt-4 rounded-md border border-amber-300 bg-amber-50 p-3 text-sm dark:border-amber-800 dark:bg-amber-950"
          data-testid="issued-token"
        >
          <h3 id="issued-token-heading" tabIndex={-1} className="font-semibold">
            Token for {issued.pool}: shown once
          </h3>
          <p className="mt-1 text-zinc-700 dark:text-zinc-300">
            Copy it now: only its hash is kept and it cannot be shown again.{" "}
            {issued.singleUse ? "One host can use it" : "Any number of hosts can use it"} until{" "}
            {new Date(issued.expiresAt).toLocaleString()}.
          </p>
          <div className="mt-2 flex items-center gap-2">
            <code className="font-mono break-all" data-testid="issued-token-value">
              {issued.token}
            </code>
            <CopyButton text={issued.token} label="Copy token" />
          </div>
          <p className="mt-2 text-zinc-700 dark:text-zinc-300">On the host, from a Kiln checkout:</p>
          <div className="mt-1 flex items-start gap-2">
            <pre
              className="overflow-x-auto rounded bg-white p-2 font-mono text-xs dark:bg-zinc-900"
              data-testid="register-command"
            >
              {issued.command}
            </pre>
            <CopyButton text={issued.command} label="Copy command" />
          </div>
          <Button size="sm" className="mt-2" onClick={() => setIssued(null)}>
            Done, hide the token
          </Button>
        </section>
      ) : null}
    </Card>
  );
}
