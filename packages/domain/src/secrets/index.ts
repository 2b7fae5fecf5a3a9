export {
  SECRET_NAME_PATTERN,
  secretNameProblem,
  MAX_SECRET_VALUE_BYTES,
  SECRET_KEK_STATES,
} from "./secret-names.ts";
export {
  decideSecretDelivery,
  SECRET_WITHHELD_UNTRUSTED,
  SECRET_WITHHELD_MESSAGE,
  SECRET_NOT_SET,
  type SecretDelivery,
  type StoredSecretRef,
} from "./secret-delivery.ts";
export { maskFormsOf, maskPatternsFor } from "./mask-forms.ts";
