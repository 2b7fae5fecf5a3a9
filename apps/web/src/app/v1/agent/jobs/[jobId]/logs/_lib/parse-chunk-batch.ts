// A chunk batch in either wire form (packages/domain/src/agent-protocol): the agent's binary frame
// (header + raw bytes) or JSON with base64 data (handy for curl and tests).
import { AGENT_ENDPOINTS, agentProtocol, decodeLogFrame, DomainError, LOG_CHUNKS_CONTENT_TYPE } from "@kiln/domain";
import type { IncomingChunk } from "@kiln/engine";
import type { z } from "zod";

export function parseChunkBatch(
  contentType: string | null,
  raw: Uint8Array,
): { epoch: number; chunks: IncomingChunk[] } {
  if ((contentType ?? "").split(";")[0]?.trim().toLowerCase() === LOG_CHUNKS_CONTENT_TYPE) {
    const frame = decodeLogFrame(raw);
    if (!frame) throw new DomainError("REQUEST.INVALID", "malformed log frame");
    const header = valid(AGENT_ENDPOINTS.appendLogs.request, frame.header);
    let at = 0;
    const chunks = header.chunks.map((c) => {
      if (at + c.length > frame.payload.length)
        throw new DomainError("REQUEST.INVALID", `chunk ${c.seq}: the payload is shorter than the header says`);
      const data = Buffer.from(frame.payload.buffer, frame.payload.byteOffset + at, c.length);
      at += c.length;
      return { ...c, data };
    });
    if (at !== frame.payload.length)
      throw new DomainError("REQUEST.INVALID", "the payload is longer than the header says");
    return { epoch: header.epoch, chunks };
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(raw).toString("utf8"));
  } catch {
    throw new DomainError("REQUEST.INVALID", "body is not valid JSON");
  }
  const body = valid(agentProtocol.logAppendRequest, json);
  return {
    epoch: body.epoch,
    chunks: body.chunks.map(({ data, ...c }) => ({ ...c, data: Buffer.from(data, "base64") })),
  };
}

function valid<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DomainError("REQUEST.INVALID", `${issue?.path.join(".") || "body"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}
