// The dashboard's read-side use cases (packages/engine/src/views), through @kiln/engine's public API.
export * from "@kiln/engine";
