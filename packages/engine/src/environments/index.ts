// Public API of the environments capability (issue 18, docs/adr/0032-environments-gates-promotions.md).
export { movePointer, type PointerMove, type PointerMoved } from "./move-pointer.ts";
