// `audit list`: the org's append-only audit trail (issue 16), oldest first, a page at a time.
import { listAuditEvents } from "@kiln/engine";
import { arg, type CliCommand, intOpt, opt, UsageError } from "./command.ts";

export const auditCommands: CliCommand[] = [
  {
    name: "audit list",
    usage: `audit list <org> [--kind secret.read|secret.] [--since <ISO time>] [--after <seq>] [--limit 100]
    (kind: exact, or a prefix ending in "."; --after: the last seq shown, for the next page)`,
    options: {
      kind: { type: "string" },
      since: { type: "string" },
      after: { type: "string" },
      limit: { type: "string" },
    },
    async run(ctx) {
      const since = opt(ctx.values, "since");
      const sinceDate = since ? new Date(since) : undefined;
      if (sinceDate && Number.isNaN(sinceDate.getTime())) throw new UsageError("--since must be an ISO time");
      const kind = opt(ctx.values, "kind");
      const after = opt(ctx.values, "after");
      const limit = intOpt(ctx.values, "limit");
      const events = await listAuditEvents(ctx.db, {
        orgSlug: arg(ctx, 0, "org"),
        ...(kind ? { kind } : {}),
        ...(sinceDate ? { since: sinceDate } : {}),
        ...(after ? { afterSeq: after } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      ctx.out(
        events
          .map((e) => `${e.seq}\t${e.at}\t${e.kind}\t${e.actor}\t${e.subject ?? "-"}\t${JSON.stringify(e.data)}`)
          .join("\n") || "(no audit events)",
        events,
      );
      return 0;
    },
  },
];
