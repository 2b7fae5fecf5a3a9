"use client";
import { Button } from "@kiln/ui";
import { useState } from "react";

/** Copies `text` to the clipboard and says so (or that the browser refused: then select it by hand). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  const copy = () => {
    // No clipboard API outside a secure context (plain http on a LAN address): say so, never throw.
    if (!("clipboard" in navigator)) return setState("failed");
    navigator.clipboard.writeText(text).then(
      () => setState("copied"),
      () => setState("failed"),
    );
  };
  return (
    <span className="inline-flex items-center gap-2">
      <Button size="sm" onClick={copy} aria-label={label}>
        {state === "copied" ? "Copied" : "Copy"}
      </Button>
      <span aria-live="polite" className="text-xs text-zinc-600 dark:text-zinc-400">
        {state === "failed" ? "The browser refused: select the text and copy it" : ""}
      </span>
    </span>
  );
}
