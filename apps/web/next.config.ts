import type { NextConfig } from "next";

const config: NextConfig = {
  // Workspace packages export TypeScript source.
  transpilePackages: ["@kiln/db", "@kiln/domain", "@kiln/engine", "@kiln/logger", "@kiln/oci", "@kiln/ui"],
  // prom-client keeps its registries in module state: one copy per process, not one per route bundle.
  serverExternalPackages: ["pg", "pg-boss", "@prisma/adapter-pg", "@prisma/client", "prom-client"],
  poweredByHeader: false,
  reactStrictMode: true,
  // Issue 15: on every response. Dashboard pages get their nonce CSP from src/proxy.ts; /v1 answers
  // machines, so nothing in it may run, load or be framed.
  headers: async () => [
    {
      source: "/:path*",
      headers: [
        { key: "x-content-type-options", value: "nosniff" },
        { key: "referrer-policy", value: "strict-origin-when-cross-origin" },
        { key: "x-frame-options", value: "DENY" },
      ],
    },
    {
      source: "/v1/:path*",
      headers: [
        {
          key: "content-security-policy",
          value: "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        },
      ],
    },
  ],
};

export default config;
