// s3rver ships no type declarations and there is no @types/s3rver, so under `strict` an
// import would be an implicit-any error. This declares only the surface this package uses
// (constructor options, run, close, the underlying http.Server, errors and the key registry).
// Every tsconfig that compiles this package lists this file (tsconfig.base.json "files").
declare module "s3rver" {
  import type { AddressInfo } from "node:net";
  import type { Server } from "node:http";

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: Array<{ name: string; configs?: Array<string | Buffer> }>;
  }

  export default class S3rver {
    constructor(options?: S3rverOptions);
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
    httpServer?: Server;
  }
}

declare module "s3rver/lib/models/error.js" {
  export default class S3Error extends Error {
    constructor(code: string, message: string, detail?: Record<string, string>);
  }
}

declare module "s3rver/lib/models/account.js" {
  export default class AWSAccount {
    constructor(accountId: number, displayName: string);
    createKeyPair(accessKeyId: string, secretAccessKey: string): void;
    revokeAccessKey(accessKeyId: string): void;
  }
}
