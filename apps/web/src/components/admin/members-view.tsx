"use client";
import { Card, ConfirmButton, DataTable, EmptyState, inputClasses, Notices } from "@kiln/ui";
import { ROLES, type Role } from "@kiln/domain";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { useOrg } from "../org-context.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import type { MemberData } from "../types.ts";
import { AdminPage } from "./admin-page.tsx";
import { AddMemberForm } from "./add-member-form.tsx";

/**
 * The org's members (issue 19): add by forge account (numeric id and login), change a role, remove.
 * The server refuses to leave the org without an admin (MEMBER.LAST_ADMIN) and audits every change.
 * Refreshed every 10 s so a change made from the CLI or by another admin appears.
 */
export function MembersView({ org }: { org: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const now = useNow(30_000);
  const { login: me } = useOrg();
  const q = useQuery({ ...trpc.members.list.queryOptions({ org }), refetchInterval: 10_000 });
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.members.list.queryKey({ org }) });
  const start = () => {
    setNote(null);
    setError(null);
  };
  const setRole = useMutation(
    trpc.members.setRole.mutationOptions({
      onMutate: start,
      onSuccess: async (m) => {
        await refresh();
        setNote(`${m.login} is now ${m.role}.`);
      },
      onError: (e) => setError(`Could not change the role: ${e.message}`),
    }),
  );
  const remove = useMutation(
    trpc.members.remove.mutationOptions({
      onMutate: start,
      onSuccess: async (r) => {
        await refresh();
        setNote(`Removed ${r.login}. Their next request is refused.`);
        document.querySelector<HTMLElement>("#members-heading")?.focus();
      },
      onError: (e) => setError(`Could not remove: ${e.message}`),
    }),
  );
  // The server's role, except while a change of it is in flight: a refused change (the last
  // admin) snaps back to what the server holds. A function, not a component: re-created each
  // render, a component would remount the select and drop its focus.
  const roleSelect = (m: MemberData) => {
    const busy = setRole.isPending && setRole.variables?.userId === m.userId;
    return (
      <select
        aria-label={`Role of ${m.login}`}
        className={`${inputClasses} h-8 w-32`}
        value={busy ? setRole.variables.role : m.role}
        disabled={busy}
        onChange={(e) => setRole.mutate({ org, userId: m.userId, role: e.currentTarget.value as Role })}
      >
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
    );
  };
  return (
    <AdminPage org={org} title="Members" what="Members" query={q}>
      {() => {
        const members = q.data as MemberData[];
        return (
          <Card
            title={
              <span id="members-heading" tabIndex={-1}>
                Members of {org}
              </span>
            }
            id="members"
          >
            <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">
              Members are matched by the forge&apos;s numeric user id, never by login: pushes and pull requests by
              admins and members run as trusted. Auditors only read.
            </p>
            <DataTable
              rows={members}
              rowKey={(m) => m.userId}
              rowProps={(m) => ({ "data-login": m.login })}
              testId="members-table"
              empty={<EmptyState title="No members">Add one below.</EmptyState>}
              columns={[
                {
                  key: "login",
                  header: "Login",
                  className: "font-mono",
                  cell: (m) => (
                    <>
                      {m.login}
                      {m.login === me ? <span className="ml-1 text-xs text-zinc-500">(you)</span> : null}
                    </>
                  ),
                },
                {
                  key: "forge-id",
                  header: "Forge id",
                  className: "tabular-nums",
                  cell: (m) => m.forgeId ?? "none: never trusted",
                },
                { key: "role", header: "Role", cell: roleSelect },
                { key: "since", header: "Member since", cell: (m) => <RelativeTime iso={m.createdAt} now={now} /> },
                {
                  key: "actions",
                  header: "Actions",
                  hideHeader: true,
                  className: "text-right",
                  cell: (m) => (
                    <ConfirmButton
                      label="Remove"
                      ariaLabel={`Remove ${m.login}`}
                      title={`Remove ${m.login} from ${org}?`}
                      confirmLabel={`Confirm removal of ${m.login}`}
                      pendingLabel="Removing…"
                      onConfirm={() => remove.mutateAsync({ org, userId: m.userId })}
                    >
                      Their next request is refused.
                    </ConfirmButton>
                  ),
                },
              ]}
            />
            <Notices error={error} note={note} />
            <AddMemberForm
              org={org}
              onAdded={async (login, role) => {
                await refresh();
                setNote(`${login} is now ${role}.`);
              }}
            />
          </Card>
        );
      }}
    </AdminPage>
  );
}
