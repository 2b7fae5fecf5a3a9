// Public API of @kiln/testkit: real (not mocked) backing services for tests.
export {
  startTestPostgres,
  createTemplate,
  cloneDatabase,
  dropDatabase,
  databaseUrl,
  uniqueDatabaseName,
  type TestPostgres,
} from "./postgres.ts";
export { startGitServer, runGit, gitEnv, type TestGitServer, type TestGitRepo } from "./git-server.ts";
// Redis/S3/PostgreSQL process launchers shared with `npm run up`.
export {
  startPostgres,
  startRedis,
  startS3,
  freePort,
  type PostgresHandle,
  type RedisHandle,
  type S3Handle,
} from "../../../scripts/lib/embedded-services.ts";
// Debian's docker-registry (distribution v2) on 127.0.0.1, and Kiln's base image published to it.
export { startRegistry, type RegistryHandle, type RegistryOptions } from "../../../scripts/lib/oci-registry.ts";
export {
  buildBaseImage,
  publishBaseImage,
  BASE_IMAGE_NAME,
  type PublishedImage,
} from "../../../scripts/lib/base-image.ts";
