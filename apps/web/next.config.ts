import type { NextConfig } from "next";

const config: NextConfig = {
  // Workspace packages export TypeScript source.
  transpilePackages: ["@kiln/db", "@kiln/domain", "@kiln/engine", "@kiln/logger", "@kiln/oci", "@kiln/ui"],
  serverExternalPackages: ["pg", "pg-boss", "@prisma/adapter-pg", "@prisma/client"],
  poweredByHeader: false,
  reactStrictMode: true,
};

export default config;
