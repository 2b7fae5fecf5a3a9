// Sizes for tests of the microvm driver (ADR 0041): under TCG a guest's boot grows with its memory
// (~30 s per GiB here), so tests that do not measure the sizes themselves boot 256 MiB guests
// with a 256 MiB work disk instead of the production figures.
import type { RunnerSize, SizeResources } from "@kiln/domain";

const TEST_SIZE: SizeResources = { vcpus: 1, memoryMiB: 256, diskMiB: 256, maxProcesses: 1024 };

export const MICROVM_TEST_SIZES: Record<RunnerSize, SizeResources> = {
  small: TEST_SIZE,
  medium: { ...TEST_SIZE, vcpus: 2 },
  large: { ...TEST_SIZE, vcpus: 2, memoryMiB: 384 },
};
