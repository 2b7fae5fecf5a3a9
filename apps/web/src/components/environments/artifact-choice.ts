import { formatRelative, shortSha } from "@kiln/ui";

/** One promotable artifact as the picker receives it (the engine's PromotableArtifact, over tRPC). */
export interface ArtifactChoice {
  artifactId: string;
  name: string;
  job: string;
  commitSha: string;
  digest: string;
  sealedAt: string;
  attestation: "logged" | "verified";
}

/**
 * What a person reads to pick an artifact: its name and job, the commit it was built from, the
 * start of its digest (enough to match what a deploy log prints) and its age. Never the id.
 */
export function artifactChoiceLabel(a: ArtifactChoice, now: number): string {
  const digest = a.digest.replace(/^sha256:/, "").slice(0, 12);
  return `${a.name} (${a.job}) · ${shortSha(a.commitSha)} · sha256:${digest} · ${formatRelative(a.sealedAt, now)}${
    a.attestation === "verified" ? " · verified" : ""
  }`;
}
