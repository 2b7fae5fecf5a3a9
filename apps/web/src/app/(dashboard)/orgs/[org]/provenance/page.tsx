import { Suspense } from "react";
import { ProvenanceSearch } from "@/components/provenance/provenance-search.tsx";
import { requireUser } from "@/server/auth/require-user.ts";

export const dynamic = "force-dynamic";
export const metadata = { title: "Provenance · Kiln" };

/** Provenance search (issue 17): read-only for every role, the auditor's starting point. */
export default async function ProvenancePage({ params }: { params: Promise<{ org: string }> }) {
  const { org } = await params;
  await requireUser(`/orgs/${org}/provenance`);
  return (
    <Suspense>
      <ProvenanceSearch org={org} />
    </Suspense>
  );
}
