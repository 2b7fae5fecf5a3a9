// Metering (issue 33, docs/adr/0045): `usage` prints an org's showback (minutes by repo, pool and
// size; stored bytes by retention class), as a table or the API's CSV; `quota set|show` is the
// operator's path to an org's monthly minute quota.
import { minuteQuotaStatus, orgIdOf, setMinuteQuota, usageCsv, usagePeriod, usageReport } from "@kiln/engine";
import type { MinuteQuotaStatus } from "@kiln/engine";
import { arg, type CliCommand, opt, UsageError } from "./command.ts";

function describeQuota(org: string, q: MinuteQuotaStatus): string {
  const used = (q.usedSeconds / 60).toFixed(1);
  if (q.quotaMinutes === null) return `${org}: unlimited minutes (${used} counted in ${q.month.slice(0, 7)})`;
  return `${org}: ${used} of ${q.quotaMinutes} minutes used in ${q.month.slice(0, 7)} (${q.percent}%, ${q.level})`;
}

export const usageCommands: CliCommand[] = [
  {
    name: "usage",
    usage: `usage --org <org> [--from <YYYY-MM-DD>] [--to <YYYY-MM-DD>] [--csv]
    (job-minutes by repo, pool and size and stored bytes by retention class; period [from, to) in UTC,
     default this month; --csv prints what GET /v1/orgs/<org>/usage?format=csv answers)`,
    options: { org: { type: "string" }, from: { type: "string" }, to: { type: "string" }, csv: { type: "boolean" } },
    async run(ctx) {
      const org = opt(ctx.values, "org");
      if (!org) throw new UsageError("--org is required");
      const period = usagePeriod(opt(ctx.values, "from"), opt(ctx.values, "to"), new Date());
      const report = await usageReport(ctx.db, { orgId: await orgIdOf(ctx.db, org), ...period });
      if (ctx.values.csv === true) {
        process.stdout.write(usageCsv(report));
        return 0;
      }
      const rows = report.minutes.map(
        (m) =>
          `${m.repo}\t${m.pool}\t${m.size}\t${m.selfHosted ? "self-hosted" : "platform"}\t${m.attempts}\t${(m.seconds / 60).toFixed(1)}\t${(m.billableSeconds / 60).toFixed(1)}`,
      );
      const storage = report.storage.map((s) => `${s.repo}\t${s.kind}\t${s.retentionClass}\t${s.objects}\t${s.bytes}`);
      const t = report.totals;
      ctx.out(
        [
          `${org} ${report.from} .. ${report.to}`,
          "repo\tpool\tsize\thosting\tattempts\tminutes\tbillable",
          ...rows,
          `total\t\t\t\t${t.attempts}\t${(t.seconds / 60).toFixed(1)}\t${(t.billableSeconds / 60).toFixed(1)}`,
          ...(storage.length > 0 ? ["", "repo\tkind\tretention\tobjects\tbytes", ...storage] : []),
          describeQuota(org, report.quota),
        ].join("\n"),
        report,
      );
      return 0;
    },
  },
  {
    name: "quota set",
    usage: `quota set <org> --minutes <n>|unlimited
    (the org's minutes per UTC month on platform pools; at 100% its new jobs wait READY with
     quota.minutes_exhausted until the quota is raised or the month ends; audited)`,
    options: { minutes: { type: "string" } },
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const raw = opt(ctx.values, "minutes");
      if (raw === undefined || !(raw === "unlimited" || /^\d+$/.test(raw)))
        throw new UsageError("--minutes must be a whole number or unlimited");
      const q = await setMinuteQuota(ctx.db, {
        orgSlug: org,
        minutes: raw === "unlimited" ? null : Number(raw),
        actor: ctx.actor,
      });
      ctx.out(describeQuota(org, q), q);
      return 0;
    },
  },
  {
    name: "quota show",
    usage: "quota show <org>   (this month's counted minutes against the org's quota)",
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const q = await minuteQuotaStatus(ctx.db, await orgIdOf(ctx.db, org));
      ctx.out(describeQuota(org, q), q);
      return 0;
    },
  },
];
