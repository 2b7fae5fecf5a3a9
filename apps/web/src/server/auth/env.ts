import { z } from "zod";

// Sign-in configuration, parsed at first use (never during `next build`). process.env is read here
// and in ../env.ts only.

/**
 * Signs development-login sessions when no AUTH_SECRET is given. It is public (it is in the source),
 * so it is only ever used where dev login is on AND the server is not a production build.
 */
const DEV_ONLY_SECRET = "kiln-dev-only-secret-never-use-in-production-0000";

const fields = z.object({
  /** Set by Next: `next start` and `next build` run as production. */
  NODE_ENV: z.string().default("development"),
  /**
   * "1" enables the development sign-in: any login that exists in app_user with a membership
   * signs in WITHOUT a password. `npm run up` sets it for local use. It is an authentication
   * bypass by design, so the server refuses to start with it under NODE_ENV=production or on a
   * public URL that is not loopback (devLoginRefusal).
   */
  KILN_DEV_LOGIN: z.enum(["0", "1", ""]).default("0"),
  /** The platform's public URL (what users and forges reach); AUTH_URL stands in when unset. */
  KILN_PUBLIC_URL: z.url().optional(),
  /** Key for signing and encrypting session JWTs (32+ characters; `openssl rand -base64 33`). */
  AUTH_SECRET: z.string().min(32, "AUTH_SECRET must be at least 32 characters").optional(),
  /** GitHub OAuth app credentials; the GitHub sign-in is offered when both are set. */
  AUTH_GITHUB_ID: z.string().min(1).optional(),
  AUTH_GITHUB_SECRET: z.string().min(1).optional(),
  /** The dashboard's public URL; set it in production so redirects never trust the Host header. */
  AUTH_URL: z.url().optional(),
  /** "true" when a trusted reverse proxy sets X-Forwarded-Host and AUTH_URL is not set. */
  AUTH_TRUST_HOST: z.enum(["true", "false", "1", "0"]).optional(),
});

/** The variables sign-in reads (the deployment manifests' env check lists them, docs/adr/0046). */
export const AUTH_ENV_NAMES: readonly string[] = Object.keys(fields.shape);

const schema = fields.transform((e, ctx) => {
  const devLogin = e.KILN_DEV_LOGIN === "1";
  const production = e.NODE_ENV === "production";
  const refusal = devLoginRefusal(e);
  if (refusal) {
    ctx.addIssue({ code: "custom", path: ["KILN_DEV_LOGIN"], message: refusal });
    return z.NEVER;
  }
  const secret = e.AUTH_SECRET ?? (devLogin && !production ? DEV_ONLY_SECRET : undefined);
  if (!secret) {
    ctx.addIssue({
      code: "custom",
      path: ["AUTH_SECRET"],
      message: "AUTH_SECRET is required (it may only be omitted with KILN_DEV_LOGIN=1 outside production)",
    });
    return z.NEVER;
  }
  return {
    devLogin,
    secret,
    github:
      e.AUTH_GITHUB_ID && e.AUTH_GITHUB_SECRET
        ? { clientId: e.AUTH_GITHUB_ID, clientSecret: e.AUTH_GITHUB_SECRET }
        : null,
    // Dev login is a local tool, served on whatever host:port it was started on.
    trustHost: e.AUTH_URL !== undefined || e.AUTH_TRUST_HOST === "true" || e.AUTH_TRUST_HOST === "1" || devLogin,
  };
});

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * Why the development sign-in may not run here, or null. It signs in any member without a
 * password, so it is refused where a real deployment would be: a production NODE_ENV (npm run up
 * and the e2e suites run the production build with NODE_ENV=test for this reason) or a public URL
 * other people can reach.
 */
function devLoginRefusal(e: {
  KILN_DEV_LOGIN?: string | undefined;
  NODE_ENV?: string | undefined;
  KILN_PUBLIC_URL?: string | undefined;
  AUTH_URL?: string | undefined;
}): string | null {
  if (e.KILN_DEV_LOGIN !== "1") return null;
  if ((e.NODE_ENV ?? "development") === "production")
    return "KILN_DEV_LOGIN=1 (the password-less development sign-in) is refused under NODE_ENV=production; unset KILN_DEV_LOGIN, or run a local production build with NODE_ENV=test";
  for (const name of ["KILN_PUBLIC_URL", "AUTH_URL"] as const) {
    const raw = e[name];
    if (!raw) continue;
    let host: string;
    try {
      host = new URL(raw).hostname.toLowerCase();
    } catch {
      host = "";
    }
    if (!LOOPBACK_HOSTS.has(host) && !/^127(\.\d{1,3}){3}$/.test(host))
      return `KILN_DEV_LOGIN=1 (the password-less development sign-in) is refused because ${name}=${raw} is not a loopback address; unset KILN_DEV_LOGIN`;
  }
  return null;
}

/** Why this server's environment may not run the development sign-in, or null (checked at start). */
export function devLoginRefusalOfProcess(): string | null {
  return devLoginRefusal(process.env);
}

export type AuthEnv = z.infer<typeof schema>;
let parsed: AuthEnv | null = null;

/** Parses an env record (process.env at first use; a plain record in tests). */
export function parseAuthEnv(source: Record<string, string | undefined>): AuthEnv {
  return schema.parse(source);
}

export function authEnv(): AuthEnv {
  if (!parsed) parsed = parseAuthEnv(process.env);
  return parsed;
}

/** Why sign-in cannot work on this server (shown on the sign-in page), or null when it can. */
export function authEnvProblem(): string | null {
  const r = schema.safeParse(process.env);
  return r.success ? null : r.error.issues.map((i) => i.message).join("; ");
}

/**
 * The origin every state-changing dashboard request must come from (the proxy's Origin check):
 * KILN_PUBLIC_URL, else AUTH_URL; null when neither is set, and then the origin the request was
 * addressed to (its Host) stands in, which is what a local `npm run up` serves on.
 */
export function publicOrigin(): string | null {
  for (const raw of [process.env.KILN_PUBLIC_URL, process.env.AUTH_URL]) {
    if (!raw) continue;
    try {
      return new URL(raw).origin;
    } catch {
      // An unparsable URL is reported by authEnv(); the Host fallback keeps the check meaningful.
    }
  }
  return null;
}

/** `next dev` needs 'unsafe-eval' in the CSP (React's dev tooling); a production build never does. */
export function isNextDev(): boolean {
  return process.env.NODE_ENV === "development";
}
