export { fetchJobSecrets, NO_SECRETS, type JobSecrets, type SecretsResult } from "./job-secrets.ts";
