import type { ReactNode } from "react";
import { TrpcReactProvider } from "@/trpc/client.tsx";
import "../styles/globals.css";

export const metadata = { title: "Kiln", description: "CI/CD with honest outcomes" };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen bg-zinc-50 text-zinc-900 antialiased dark:bg-zinc-950 dark:text-zinc-100">
        <a
          href="#main"
          className="sr-only focus:not-sr-only focus:fixed focus:left-2 focus:top-2 focus:z-50 focus:rounded focus:bg-white focus:px-3 focus:py-2 focus:text-sm focus:shadow dark:focus:bg-zinc-900"
        >
          Skip to content
        </a>
        <TrpcReactProvider>{children}</TrpcReactProvider>
      </body>
    </html>
  );
}
