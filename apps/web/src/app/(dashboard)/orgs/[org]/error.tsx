"use client";
import { ErrorState } from "@kiln/ui";

/** Anything a page did not handle itself: say so, offer a retry, keep the header usable. */
export default function OrgError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <ErrorState
      title="This page failed to load"
      message={error.digest ? `Error reference ${error.digest}.` : error.message}
      onRetry={reset}
    />
  );
}
