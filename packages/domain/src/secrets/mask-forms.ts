// What the agent masks for each delivered secret (issue 16): the value itself and the forms a step
// most often prints it in by accident: base64 (standard and URL-safe, with and without padding),
// URL-encoded (encodeURIComponent, and form-encoding's + for spaces) and JSON-escaped (the string
// as JSON.stringify writes it, without the quotes). Best effort by nature (ADR 0006): a step that
// transforms a value in another way can still print it.

const MIN_FORM_LENGTH = 4;

function base64Forms(bytes: Uint8Array): string[] {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  const std = btoa(binary);
  const unpadded = std.replace(/=+$/, "");
  const url = unpadded.replace(/\+/g, "-").replace(/\//g, "_");
  return [std, unpadded, url];
}

export function maskFormsOf(value: string): string[] {
  const forms = new Set<string>([value]);
  for (const f of base64Forms(new TextEncoder().encode(value))) forms.add(f);
  const uri = encodeURIComponent(value);
  forms.add(uri);
  forms.add(uri.replace(/%20/g, "+"));
  // Lower-case percent escapes are as valid and some encoders emit them.
  forms.add(uri.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  forms.add(JSON.stringify(value).slice(1, -1));
  // Many JSON writers (Python's json.dumps by default) escape every non-ASCII character.
  forms.add(
    JSON.stringify(value)
      .slice(1, -1)
      .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );
  for (const line of value.split(/\r?\n/)) if (line.trim().length >= 8) forms.add(line);
  return [...forms].filter((f) => f.length >= MIN_FORM_LENGTH);
}

/** Every form of every value, longest first (the masker prefers the longer match at one byte). */
export function maskPatternsFor(values: readonly string[]): string[] {
  const out = new Set<string>();
  for (const v of values) for (const f of maskFormsOf(v)) out.add(f);
  return [...out].sort((a, b) => b.length - a.length);
}
