// `shred evidence` and `shred leaks` (issue 21, docs/adr/0037): the destroyer's deletion evidence
// for an org, and the deletion sampler's open findings (exit 1 when there is any, for scripts).
import { DomainError } from "@kiln/domain";
import { listDestructionEvidence, listShredLeaks } from "@kiln/engine";
import { arg, type CliCommand, type CliContext, intOpt } from "./command.ts";

async function orgId(ctx: CliContext): Promise<string> {
  const slug = arg(ctx, 0, "org");
  const rows = await ctx.db.$queryRaw<{ id: string }[]>`SELECT id::text FROM org WHERE slug = ${slug}`;
  if (!rows[0]) throw new DomainError("ORG.NOT_FOUND", `no org ${slug}`);
  return rows[0].id;
}

export const shreddingCommands: CliCommand[] = [
  {
    name: "shred evidence",
    usage: `shred evidence <org> [--limit 100]
    (each destroyed data key: key id, day, kind/class, due, destroyed at, its day key, objects covered)`,
    options: { limit: { type: "string" } },
    async run(ctx) {
      const rows = await listDestructionEvidence(ctx.db, await orgId(ctx), intOpt(ctx.values, "limit") ?? 100);
      ctx.out(
        rows
          .map(
            (r) =>
              `${r.key_id}\t${r.day}\t${r.kind}/${r.class}\tdue ${r.due_at}\tdestroyed ${r.destroyed_at}\tday key ${r.platform_key_destroyed_at ?? "pending"}\t${r.objects} objects`,
          )
          .join("\n") || "(no data key destroyed yet)",
        { evidence: rows },
      );
      return 0;
    },
  },
  {
    name: "shred leaks",
    usage: `shred leaks <org>
    (deleted objects the deletion sampler could still read; exit 1 when there is any)`,
    async run(ctx) {
      const leaks = await listShredLeaks(ctx.db, await orgId(ctx));
      ctx.out(
        leaks.map((l) => `${l.detected_at}\t${l.path}\t${l.object_key}\t${l.detail}`).join("\n") ||
          "(no leaks: every sampled deletion held)",
        { leaks },
      );
      return leaks.length > 0 ? 1 : 0;
    },
  },
];
