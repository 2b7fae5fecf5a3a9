import { LoadingBlock } from "@kiln/ui";

export default function Loading() {
  return <LoadingBlock rows={6} />;
}
