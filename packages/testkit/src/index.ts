// Public API of @kiln/testkit: Kiln's test and development infrastructure, real (never mocked)
// services on loopback, and the one harness that starts the whole platform.
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
export { freePort } from "./free-port.ts";
export { startPostgres, type PostgresHandle } from "./embedded-postgres.ts";
export { startRedis, type RedisHandle } from "./embedded-redis.ts";
export { startS3, s3Env, type S3Handle } from "./embedded-s3.ts";
export { S3_CREDENTIALS_FILE, type S3Credentials } from "./s3-auth.ts";
export { startS3Process } from "./s3-process.ts";
export { startS3WithAbort, type S3WithAbort } from "./s3-with-abort.ts";
// Debian's docker-registry (distribution v2) on 127.0.0.1, and Kiln's base image published to it.
export { startRegistry, type RegistryHandle, type RegistryOptions } from "./oci-registry.ts";
export { buildBaseImage, publishBaseImage, BASE_IMAGE_NAME, BUSYBOX, type PublishedImage } from "./base-image.ts";
export { webBuildIsStale, buildWebIfStale } from "./web-build.ts";
// Real open-source projects' own suites (sources downloaded, pinned by SHA-256), and the toolchain
// images they run in (issue 30).
export {
  brokenTree,
  realProjectsTree,
  publishRealProjectImages,
  REAL_PROJECTS,
  realProjectsWorkflow,
  type RealProject,
} from "./real-projects.ts";
export {
  startPlatform,
  registryAvailable,
  Platform,
  REPO_ROOT,
  FAST_LEASES_ENV,
  type PlatformOptions,
  type PostgresMode,
  type WebOptions,
  type AgentOptions,
} from "./platform/start-platform.ts";
export type { ManagedProc, OutputMode } from "./platform/managed-processes.ts";
export { ensureAppLoginRoles, loginRoleName, type AppRoleUrls } from "./platform/app-roles.ts";
// A local stand-in for GitHub's REST API built from its documented example responses (issue 19).
export {
  startFakeForge,
  EXAMPLE_REPOSITORY_ID,
  type FakeForge,
  type FakeForgeOptions,
  type FakeRepoOptions,
  type RecordedRequest,
  type StatusRecord,
  type CheckRunRecord,
} from "./fake-forge/fake-forge.ts";
export { vectorPath } from "./vectors.ts";
