"use client";
import { QueryClientProvider, type QueryClient } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState, type ReactNode } from "react";
import { z } from "zod";
import { makeQueryClient } from "./query-client.ts";
import type { AppRouter } from "@/server/trpc/router.ts";

// Under the dashboard's CSP (no 'unsafe-eval'), zod's JIT probe (`new Function`) is refused and
// reported as a violation although zod catches it. The browser parses only small inputs (filters),
// so it parses without the JIT; the server, which parses agent traffic, keeps it. This module is
// evaluated with the root layout, before any page parses anything.
if (typeof window !== "undefined") z.config({ jitless: true });

const { TRPCProvider, useTRPC: useTRPCContext } = createTRPCContext<AppRouter>();
export const useTRPC = useTRPCContext;

let browserClient: QueryClient | undefined;
function getQueryClient(): QueryClient {
  // On the server every request gets its own client; in the browser one lives for the tab.
  if (typeof window === "undefined") return makeQueryClient();
  return (browserClient ??= makeQueryClient());
}

export function TrpcReactProvider({ children }: { children: ReactNode }) {
  const queryClient = getQueryClient();
  const [trpcClient] = useState(() => createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: "/api/trpc" })] }));
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
