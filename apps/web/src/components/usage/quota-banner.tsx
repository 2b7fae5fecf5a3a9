import type { MinuteQuotaStatus } from "@kiln/engine";
import Link from "next/link";

/** The org pages' banner at 80% and 100% of the month's minutes (docs/adr/0045); nothing below that. */
export function QuotaBanner({ org, quota }: { org: string; quota: MinuteQuotaStatus }) {
  if (quota.level !== "warning" && quota.level !== "exhausted") return null;
  const exhausted = quota.level === "exhausted";
  return (
    <div
      role={exhausted ? "alert" : "status"}
      data-testid="quota-banner"
      className={`mx-auto mt-4 max-w-7xl rounded-lg border px-4 py-2 text-sm ${
        exhausted
          ? "border-red-200 bg-red-50 text-red-900 dark:border-red-900 dark:bg-red-950 dark:text-red-200"
          : "border-amber-200 bg-amber-50 text-amber-900 dark:border-amber-900 dark:bg-amber-950 dark:text-amber-200"
      }`}
    >
      {exhausted
        ? `${org} has used this month's ${quota.quotaMinutes} minutes: new jobs wait until the quota is raised or the month ends.`
        : `${org} has used ${quota.percent}% of this month's ${quota.quotaMinutes} minutes.`}{" "}
      <Link href={`/orgs/${org}/usage`} className="underline">
        See usage
      </Link>
    </div>
  );
}
