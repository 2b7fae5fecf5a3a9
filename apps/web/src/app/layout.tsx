import type { ReactNode } from "react";
import "../styles/globals.css";

export const metadata = { title: "Kiln", description: "CI/CD with honest outcomes" };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen bg-zinc-50 text-zinc-900 antialiased dark:bg-zinc-950 dark:text-zinc-100">{children}</body>
    </html>
  );
}
