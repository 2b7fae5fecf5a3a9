import Link from "next/link";
import { TlogStatusCard } from "@/components/attestation/tlog-status-card.tsx";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Transparency log · Kiln" };

/**
 * Public: anyone (an auditor, a witness operator) may see the log's state and pin its key without
 * an account, as they may fetch its checkpoint and tiles (issue 17).
 */
export default async function TransparencyLogPage() {
  await getQueryClient().prefetchQuery(trpc.tlog.status.queryOptions());
  return (
    <main id="main" className="mx-auto max-w-4xl px-6 py-10">
      <nav className="text-sm">
        <Link href="/" className="text-blue-700 hover:underline dark:text-blue-300">
          Kiln
        </Link>
      </nav>
      <h1 className="mt-2 text-2xl font-semibold tracking-tight">Transparency log</h1>
      <p className="mt-1 mb-6 text-sm text-zinc-600 dark:text-zinc-400">
        Every provenance statement Kiln signs is appended here. The log is append-only and its checkpoints are signed,
        so anyone can check that an entry is in it and that it was never rewritten.
      </p>
      <HydrateClient>
        <TlogStatusCard />
      </HydrateClient>
    </main>
  );
}
