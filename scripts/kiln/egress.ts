// `egress allow|deny|list`: the org's mediated-egress allow-list (docs/adr/0013-mediated-egress.md).
import { allowEgressHost, listEgressRules, removeEgressHost } from "@kiln/engine";
import { arg, type CliCommand } from "./command.ts";

export const egressCommands: CliCommand[] = [
  {
    name: "egress allow",
    usage: "egress allow <org> <host-pattern>   (host, *.suffix, optional :port; audited)",
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const r = await allowEgressHost(ctx.db, { orgSlug: org, pattern: arg(ctx, 1, "host-pattern"), actor: ctx.actor });
      ctx.out(`${org} may reach ${r.rule.pattern} from trusted runs${r.created ? "" : " (already allowed)"}`, r);
      return 0;
    },
  },
  {
    name: "egress deny",
    usage: "egress deny <org> <host-pattern>    (removes the entry: anything not listed is denied; audited)",
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const pattern = arg(ctx, 1, "host-pattern");
      await removeEgressHost(ctx.db, { orgSlug: org, pattern, actor: ctx.actor });
      ctx.out(`${pattern} removed from ${org}'s egress allow-list`, { org, pattern, removed: true });
      return 0;
    },
  },
  {
    name: "egress list",
    usage: "egress list <org>",
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const rows = await listEgressRules(ctx.db, org);
      ctx.out(
        rows.map((r) => `${r.org}\t${r.pattern}\tby ${r.created_by}\t${r.created_at}`).join("\n") ||
          `(${org} has no egress allow-list entries)`,
        rows,
      );
      return 0;
    },
  },
];
