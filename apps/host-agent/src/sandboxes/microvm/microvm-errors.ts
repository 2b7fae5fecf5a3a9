// Every failure of the microvm driver carries a code, so the agent's logs and the attempt's cause
// say which part broke (assets, boot, guest protocol) without parsing messages.
export type MicrovmErrorCode =
  | "MICROVM.MISSING_TOOL"
  | "MICROVM.ASSET_BUILD_FAILED"
  | "MICROVM.BOOT_FAILED"
  | "MICROVM.BOOT_TIMEOUT"
  | "MICROVM.SNAPSHOT_FAILED"
  | "MICROVM.GUEST_PROTOCOL"
  | "MICROVM.VM_LOST"
  | "MICROVM.BAD_INPUT"
  | "MICROVM.DESTROYED";

export class MicrovmError extends Error {
  constructor(
    readonly code: MicrovmErrorCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = "MicrovmError";
  }
}
