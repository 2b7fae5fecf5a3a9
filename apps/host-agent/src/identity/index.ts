// Workload identity on the host (docs/adr/0024): the sandbox's ID token endpoint.
export { openIdTokenEndpoint, ID_TOKEN_PATH, type IdTokenEndpoint } from "./id-token-endpoint.ts";
