"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";

/** Refetches the settings page's data after a change, so the table and the audit list agree. */
export function useRefreshSettings(org: string): () => Promise<void> {
  const trpc = useTRPC();
  const qc = useQueryClient();
  return () => qc.invalidateQueries({ queryKey: trpc.tenants.settings.queryKey({ org }) });
}
