"use client";
import { Button, Card, EmptyState, Field, Form, Notices } from "@kiln/ui";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { RelativeTime } from "../time.tsx";
import type { OrgSettingsData } from "../types.ts";
import { formErrorsOf, NO_ERRORS, type FormErrors } from "./form-errors.ts";
import { useRefreshSettings } from "./use-settings.ts";

/**
 * The hosts a trusted run's sandbox may reach through the egress proxy (ADR 0013). Anything not
 * listed is denied; untrusted runs (fork pull requests) reach nothing regardless.
 * A change applies to attempts claimed after it, not to running ones.
 */
export function EgressCard({
  org,
  rules,
  admin,
  now,
}: {
  org: string;
  rules: OrgSettingsData["egress"];
  admin: boolean;
  now: number;
}) {
  const trpc = useTRPC();
  const refresh = useRefreshSettings(org);
  const [removeError, setRemoveError] = useState<string | null>(null);
  const [removed, setRemoved] = useState<string | null>(null);
  const remove = useMutation(
    trpc.tenants.removeEgressHost.mutationOptions({
      onMutate: () => {
        setRemoveError(null);
        setRemoved(null);
      },
      onSuccess: async (_r, v) => {
        await refresh();
        setRemoved(`Removed ${v.pattern}.`);
        // The focused button is gone with its row; keep the keyboard user in the card.
        document.querySelector<HTMLInputElement>("#egress input[name=pattern]")?.focus();
      },
      onError: (e, v) => setRemoveError(`Could not remove ${v.pattern}: ${e.message}`),
    }),
  );
  return (
    <Card title="Egress allow-list" id="egress">
      <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">
        Hosts trusted runs may reach. Untrusted runs reach only Kiln&apos;s own services. Changes apply to jobs that
        start afterwards.
      </p>
      {rules.length === 0 ? (
        <EmptyState title="No hosts allowed">
          Jobs can reach only Kiln&apos;s own services; every other destination is denied and logged.
        </EmptyState>
      ) : (
        <ul className="divide-y divide-zinc-100 dark:divide-zinc-800" data-testid="egress-list">
          {rules.map((r) => (
            <li key={r.pattern} className="flex items-center justify-between gap-3 py-2" data-pattern={r.pattern}>
              <div>
                <span className="font-mono text-sm">{r.pattern}</span>
                <span className="ml-3 text-xs text-zinc-500 dark:text-zinc-400">
                  added by {r.created_by} <RelativeTime iso={r.created_at} now={now} />
                </span>
              </div>
              {admin ? (
                <Button
                  size="sm"
                  variant="danger"
                  aria-label={`Remove ${r.pattern}`}
                  disabled={remove.isPending && remove.variables?.pattern === r.pattern}
                  onClick={() => remove.mutate({ org, pattern: r.pattern })}
                >
                  {remove.isPending && remove.variables?.pattern === r.pattern ? "Removing…" : "Remove"}
                </Button>
              ) : null}
            </li>
          ))}
        </ul>
      )}
      <Notices error={removeError} note={removed} />
      {admin ? <AllowHostForm org={org} /> : null}
    </Card>
  );
}

function AllowHostForm({ org }: { org: string }) {
  const trpc = useTRPC();
  const refresh = useRefreshSettings(org);
  const formRef = useRef<HTMLFormElement>(null);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [note, setNote] = useState<string | null>(null);
  const allow = useMutation(
    trpc.tenants.allowEgressHost.mutationOptions({
      onMutate: () => {
        setErrors(NO_ERRORS);
        setNote(null);
      },
      onSuccess: async (r) => {
        await refresh();
        formRef.current?.reset();
        setNote(r.created ? `Allowed ${r.rule.pattern}.` : `${r.rule.pattern} was already on the list.`);
      },
      // The domain's pattern parser explains what is wrong with the host; it belongs under the input.
      onError: (e) => {
        const f = formErrorsOf(e);
        setErrors(
          f.message && e.data?.domainCode === "REQUEST.INVALID" ? { fields: { pattern: f.message }, message: null } : f,
        );
      },
    }),
  );
  const onSubmit = (data: FormData) => {
    const pattern = String(data.get("pattern") ?? "").trim();
    if (!pattern) return setErrors({ fields: { pattern: "enter a host name or pattern" }, message: null });
    allow.mutate({ org, pattern });
  };
  return (
    <Form
      label="Allow a host"
      testId="allow-host-form"
      className="mt-4 border-t border-zinc-200 pt-4 dark:border-zinc-800"
      formRef={formRef}
      onSubmit={onSubmit}
      pending={allow.isPending}
      submitLabel="Allow host"
      pendingLabel="Allowing…"
      error={errors.message}
      note={note}
    >
      <Field
        label="Host pattern"
        name="pattern"
        autoComplete="off"
        spellCheck={false}
        placeholder="registry.npmjs.org"
        className="w-80"
        hint="A host, *.suffix or IP, optionally :port (without a port: 443 and 80)"
        error={errors.fields.pattern}
      />
    </Form>
  );
}
