// `token`, `agent-token` and `job-key` commands (issue 15, docs/adr/0018).
import {
  bindJobTokenKek,
  createAgentToken,
  createApiToken,
  createMemberApiToken,
  listAgentTokens,
  listApiTokens,
  revokeAgentToken,
  revokeApiToken,
  rotateJobTokenKey,
} from "@kiln/engine";
import { arg, type CliCommand, intOpt, opt, UsageError } from "./command.ts";
import { readCliIdentityKek } from "./identity.ts";

export const credentialCommands: CliCommand[] = [
  {
    name: "token create",
    usage:
      "token create <org> --role admin|member|auditor | --member <login> [--name <name>] [--expires-days 90]   (prints the token once; --member: a personal token acting as that member)",
    options: {
      role: { type: "string" },
      member: { type: "string" },
      name: { type: "string" },
      "expires-days": { type: "string" },
    },
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const role = opt(ctx.values, "role");
      const login = opt(ctx.values, "member");
      const days = intOpt(ctx.values, "expires-days");
      const name = opt(ctx.values, "name");
      if (login) {
        if (role) throw new UsageError("a personal token has its member's role: give --member or --role, not both");
        const r = await createMemberApiToken(ctx.db, {
          orgSlug: org,
          login,
          ...(name ? { name } : {}),
          ...(days !== undefined ? { expiresInDays: days } : {}),
          actor: ctx.actor,
        });
        ctx.out(`${r.token}\n(acts as ${login}, now ${r.role}; shown once; expires ${r.expiresAt})`, {
          id: r.id,
          token: r.token,
          org,
          member: login,
          role: r.role,
          expiresAt: r.expiresAt,
        });
        return 0;
      }
      if (!role) throw new UsageError("token create needs --role admin|member|auditor or --member <login>");
      const r = await createApiToken(ctx.db, {
        orgSlug: org,
        role,
        ...(name ? { name } : {}),
        ...(days !== undefined ? { expiresInDays: days } : {}),
        actor: ctx.actor,
      });
      ctx.out(`${r.token}\n(shown once; only its hash is stored; expires ${r.expiresAt})`, {
        id: r.id,
        token: r.token,
        org,
        role,
        expiresAt: r.expiresAt,
      });
      return 0;
    },
  },
  {
    name: "token list",
    usage: "token list <org>",
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const rows = await listApiTokens(ctx.db, { orgSlug: org });
      ctx.out(
        rows
          .map(
            (t) =>
              `${t.id}\t${t.name}\t${t.role}\t${t.state}\texpires ${t.expiresAt}\tlast used ${t.lastUsedAt ?? "never"}`,
          )
          .join("\n") || `(${org} has no API tokens)`,
        rows,
      );
      return 0;
    },
  },
  {
    name: "token revoke",
    usage: "token revoke <org> <token-id>",
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const t = await revokeApiToken(ctx.db, { orgSlug: org, tokenId: arg(ctx, 1, "token-id"), actor: ctx.actor });
      ctx.out(`token ${t.id} (${t.name}) of ${org} revoked at ${t.revokedAt ?? ""}`, t);
      return 0;
    },
  },
  {
    name: "agent-token create",
    usage:
      "agent-token create [--pool <name>] [--org <org>] [--name <name>]   (a host credential; --org: the org owns the pool)",
    options: { pool: { type: "string" }, org: { type: "string" }, name: { type: "string" } },
    async run(ctx) {
      const org = opt(ctx.values, "org");
      const name = opt(ctx.values, "name");
      const r = await createAgentToken(ctx.db, {
        pool: opt(ctx.values, "pool") ?? "default",
        ...(org ? { orgSlug: org } : {}),
        ...(name ? { name } : {}),
      });
      ctx.out(`${r.token}\n(host credential for pool ${r.pool}${org ? `, org ${org}` : ""}; shown once)`, r);
      return 0;
    },
  },
  {
    name: "agent-token list",
    usage: "agent-token list",
    async run(ctx) {
      const rows = await listAgentTokens(ctx.db);
      ctx.out(
        rows
          .map(
            (t) =>
              `${t.id}\t${t.name}\tpool=${t.pool}\torg=${t.org ?? "-"}\t${t.revokedAt ? `revoked ${t.revokedAt}` : "active"}\tlast seen ${t.lastSeenAt ?? "never"}`,
          )
          .join("\n") || "(no host credentials)",
        rows,
      );
      return 0;
    },
  },
  {
    name: "agent-token revoke",
    usage:
      "agent-token revoke <id>     (its next claim and heartbeats are refused; its attempts fence within one lease)",
    async run(ctx) {
      const t = await revokeAgentToken(ctx.db, { id: arg(ctx, 0, "id") });
      ctx.out(`host credential ${t.id} (pool ${t.pool}) revoked at ${t.revokedAt ?? ""}`, t);
      return 0;
    },
  },
  {
    name: "job-key rotate",
    usage:
      "job-key rotate              (a new job-token signing key, sealed under the identity KEK; the previous one verifies until its tokens expire)",
    async run(ctx) {
      // Sealed under the web server's identity KEK (issue 28): run with another KEK file, this moves
      // the keys to that KEK, which the web server must then be given.
      bindJobTokenKek(ctx.db, await readCliIdentityKek());
      const r = await rotateJobTokenKey(ctx.db);
      ctx.out(
        `job tokens are now signed with key ${r.kid ?? ""} (sealed under KEK ${r.kekId})${r.retired ? `; ${r.retired} verifies until its tokens expire` : ""}`,
        r,
      );
      return 0;
    },
  },
];
