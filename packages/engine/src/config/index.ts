// The engine's configuration: its knobs (engine-config.ts) and the one env schema web and workers parse
// (engine-env.ts), which maps env to every capability's settings and so imports their defaults. It sits
// above the capabilities: they import its types only, never its values (.dependency-cruiser.cjs).
export { DEFAULT_ENGINE_CONFIG, type EngineConfig } from "./engine-config.ts";
export {
  engineEnvSchema,
  engineConfigFromEnv,
  objectStoreConfigFromEnv,
  artifactSettingsFromEnv,
  cacheSettingsFromEnv,
  logConfigFromEnv,
  forgeConfigFromEnv,
  identityKekFileFromEnv,
  type EngineEnv,
} from "./engine-env.ts";
