// Values the global setup (test/global-setup.ts) provides to every test file via inject().
import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    pgServerUrl: string;
    pgTemplate: string;
  }
}
