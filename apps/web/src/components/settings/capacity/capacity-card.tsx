"use client";
import { Card, type Column, DataTable, EmptyState } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import type { PoolEntitlementData } from "../../types.ts";
import { AddPoolForm } from "./add-pool-form.tsx";
import { EntitlementRow } from "./entitlement-row.tsx";
import { LowerCapRow } from "./lower-cap-row.tsx";

/**
 * Capacity per pool: owned slots (lent to others while idle), the weight for sharing what is left,
 * and the hard cap the claim transaction enforces. Shared capacity is set by platform admins, who
 * edit a row in place or add a pool; an org admin may only lower its own hard cap (the server
 * enforces both, docs/scheduling.md).
 */
export function CapacityCard({
  org,
  rows,
  admin: orgAdmin,
}: {
  org: string;
  rows: PoolEntitlementData[];
  admin: boolean;
}) {
  const trpc = useTRPC();
  const rights = useQuery(trpc.tenants.capacityRights.queryOptions());
  const admin = rights.data?.platformAdmin === true;
  const lowerOnly = !admin && orgAdmin;
  return (
    <Card title="Capacity" id="capacity">
      <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">
        Slots are the concurrent jobs this org owns in a pool (lent to others while idle, returned first). Weight sets
        its share of spare capacity. The hard cap is never exceeded, even when more is idle.{" "}
        {admin
          ? "You are a platform admin: changes here are audited."
          : "Slots, weight and raising the cap are set by platform operators."}
        {lowerOnly ? " As an org admin you may lower your hard cap." : ""}
      </p>
      <DataTable
        rows={rows}
        rowKey={(r) => r.pool}
        testId="capacity-table"
        columns={admin || lowerOnly ? [...HEADERS, ACTIONS] : HEADERS}
        empty={
          <EmptyState title="No entitlements yet">
            This org owns no slots and only borrows idle capacity at weight 1.
          </EmptyState>
        }
        renderRow={(r) =>
          lowerOnly ? <LowerCapRow org={org} row={r} /> : <EntitlementRow org={org} row={r} admin={admin} />
        }
      />
      {admin ? <AddPoolForm org={org} existing={rows.map((r) => r.pool)} /> : null}
    </Card>
  );
}

// The rows render themselves (they are edited in place); these columns give the table its headers.
const header = (key: string, text: string): Column<PoolEntitlementData> => ({ key, header: text, cell: () => null });
const HEADERS = [
  header("pool", "Pool"),
  header("slots", "Slots"),
  header("weight", "Weight"),
  header("hard_cap", "Hard cap"),
  header("running", "Running now"),
];
const ACTIONS: Column<PoolEntitlementData> = { ...header("actions", "Actions"), hideHeader: true };
