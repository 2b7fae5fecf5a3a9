import Link from "next/link";
import type { ReactNode } from "react";

/** next/link in the shape @kiln/ui's components accept for their links. */
export function AppLink(props: { href: string; className?: string; children: ReactNode; "aria-label"?: string }) {
  return <Link {...props} />;
}
