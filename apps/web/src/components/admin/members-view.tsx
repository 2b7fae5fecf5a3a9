"use client";
import { Button, Card, EmptyState, inputClasses } from "@kiln/ui";
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
  const [confirming, setConfirming] = useState<string | null>(null);
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
        setConfirming(null);
        await refresh();
        setNote(`Removed ${r.login}. Their next request is refused.`);
        document.querySelector<HTMLElement>("#members-heading")?.focus();
      },
      onError: (e) => setError(`Could not remove: ${e.message}`),
    }),
  );
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
            {members.length === 0 ? (
              <EmptyState title="No members">Add one below.</EmptyState>
            ) : (
              <table className="w-full text-left text-sm" data-testid="members-table">
                <thead className="text-xs text-zinc-500 dark:text-zinc-400">
                  <tr>
                    <th scope="col" className="py-1.5 font-medium">
                      Login
                    </th>
                    <th scope="col" className="py-1.5 font-medium">
                      Forge id
                    </th>
                    <th scope="col" className="py-1.5 font-medium">
                      Role
                    </th>
                    <th scope="col" className="py-1.5 font-medium">
                      Member since
                    </th>
                    <th scope="col" className="py-1.5 font-medium">
                      <span className="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                  {members.map((m) => (
                    <tr key={m.userId} data-login={m.login}>
                      <td className="py-2 font-mono">
                        {m.login}
                        {m.login === me ? <span className="ml-1 text-xs text-zinc-500">(you)</span> : null}
                      </td>
                      <td className="py-2 tabular-nums">{m.forgeId ?? "none: never trusted"}</td>
                      <td className="py-2">
                        <select
                          aria-label={`Role of ${m.login}`}
                          className={`${inputClasses} h-8 w-32`}
                          // The server's role, except while a change of it is in flight: a refused
                          // change (the last admin) snaps back to what the server holds.
                          value={
                            setRole.isPending && setRole.variables?.userId === m.userId
                              ? setRole.variables.role
                              : m.role
                          }
                          disabled={setRole.isPending && setRole.variables?.userId === m.userId}
                          onChange={(e) =>
                            setRole.mutate({ org, userId: m.userId, role: e.currentTarget.value as Role })
                          }
                        >
                          {ROLES.map((r) => (
                            <option key={r} value={r}>
                              {r}
                            </option>
                          ))}
                        </select>
                      </td>
                      <td className="py-2">
                        <RelativeTime iso={m.createdAt} now={now} />
                      </td>
                      <td className="py-2 text-right">
                        {confirming === m.userId ? (
                          <span className="inline-flex gap-2">
                            <Button
                              size="sm"
                              variant="danger"
                              autoFocus
                              disabled={remove.isPending}
                              onClick={() => remove.mutate({ org, userId: m.userId })}
                            >
                              {remove.isPending ? "Removing…" : `Confirm removal of ${m.login}`}
                            </Button>
                            <Button size="sm" variant="ghost" onClick={() => setConfirming(null)}>
                              Keep
                            </Button>
                          </span>
                        ) : (
                          <Button
                            size="sm"
                            variant="danger"
                            aria-label={`Remove ${m.login}`}
                            onClick={() => setConfirming(m.userId)}
                          >
                            Remove
                          </Button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {error ? (
              <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400">
                {error}
              </p>
            ) : null}
            <p role="status" className="mt-2 text-sm text-emerald-700 empty:hidden dark:text-emerald-400">
              {note ?? ""}
            </p>
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
