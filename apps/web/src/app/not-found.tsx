import { buttonClasses } from "@kiln/ui";
import Link from "next/link";

export default function NotFound() {
  return (
    <main id="main" className="mx-auto max-w-md px-6 py-16 text-center">
      <h1 className="text-xl font-semibold">Page not found</h1>
      <Link href="/orgs" className={`${buttonClasses("secondary")} mt-6`}>
        Your organisations
      </Link>
    </main>
  );
}
