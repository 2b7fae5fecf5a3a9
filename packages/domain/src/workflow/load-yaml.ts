import {
  isAlias,
  isMap,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  parseDocument,
  type ParsedNode,
  type YAMLError,
} from "yaml";
import { quote, WorkflowInvalid, workflowError, type Position } from "./errors.ts";
import { WORKFLOW_LIMITS } from "./limits.ts";

export interface LoadedYaml {
  root: ParsedNode;
  position: (offset: number) => Position;
}

// Lexer control tokens carry no source text, so they must not advance offsets.
const DOC_MODE = "\x02";
const FLOW_ERROR_END = "\x18";
const SCALAR_NEXT = "\x1f";

/**
 * Turns source text into a yaml node tree that is guaranteed to be small,
 * shallow, alias-free, tag-free and keyed by strings, or throws WorkflowInvalid.
 */
export function loadYaml(source: string): LoadedYaml {
  checkSize(source);
  scanNesting(source);

  const lineCounter = new LineCounter();
  const doc = parseDocument(source, {
    lineCounter,
    prettyErrors: false,
    strict: true,
    // yaml's own check compares every key with every earlier one, which takes
    // seconds on a 256 KiB map of short keys; checkTree does it with a Set.
    uniqueKeys: false,
    version: "1.2",
    schema: "core",
    merge: false,
  });
  const position = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset);
    return line === 0 ? { line: 1, column: offset + 1 } : { line, column: col };
  };
  const fail = (offset: number, text: string): never => {
    throw new WorkflowInvalid(workflowError(position(offset), null, text));
  };

  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) fail(problem.pos[0], describeYamlProblem(problem));

  const yamlVersion = doc.directives?.yaml;
  if (yamlVersion?.explicit && yamlVersion.version !== "1.2") {
    fail(0, `only YAML 1.2 is supported (found %YAML ${yamlVersion.version})`);
  }

  const root = doc.contents;
  if (root === null) {
    throw new WorkflowInvalid(workflowError(null, null, "workflow is empty; expected a mapping with version and jobs"));
  }
  checkTree(root, fail, source);
  return { root, position };
}

function checkSize(source: string): void {
  const max = WORKFLOW_LIMITS.maxBytes;
  // UTF-8 never uses fewer bytes than UTF-16 code units, so this avoids scanning
  // an oversized string just to learn that it is oversized.
  const bytes = source.length > max ? source.length : utf8Length(source);
  if (bytes > max) {
    const shown = source.length > max ? `more than ${max}` : String(bytes);
    throw new WorkflowInvalid(workflowError(null, null, `workflow is too large (${shown} bytes; the limit is ${max})`));
  }
}

function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/**
 * yaml composes nodes recursively, so `[[[[...` or `- - - -...` nested tens of
 * thousands deep exhausts the stack and takes seconds to do it. The lexer is
 * iterative and cheap, so it is used to refuse such input before composing.
 * Both counts are lower bounds on the real depth, so valid files never trip them;
 * deep nesting spread over many indented lines is caught by checkTree instead.
 */
function scanNesting(source: string): void {
  const max = WORKFLOW_LIMITS.maxDepth;
  let offset = 0;
  let flowDepth = 0;
  let blockIndicatorsOnLine = 0;
  let scalarNext = false;
  for (const token of new Lexer().lex(source)) {
    if (token === SCALAR_NEXT) {
      scalarNext = true;
      continue;
    }
    if (token === FLOW_ERROR_END) {
      flowDepth = 0;
      continue;
    }
    if (token === DOC_MODE) continue;
    const start = offset;
    offset += token.length;
    if (scalarNext) {
      scalarNext = false;
      continue;
    }
    if (token === "[" || token === "{") {
      if (++flowDepth > max) tooDeep(source, start);
    } else if (token === "]" || token === "}") {
      if (flowDepth > 0) flowDepth--;
    } else if (token === "\n" || token === "\r\n" || token === "") {
      blockIndicatorsOnLine = 0;
    } else if ((token === "-" || token === "?") && flowDepth === 0) {
      if (++blockIndicatorsOnLine > max) tooDeep(source, start);
    }
  }
}

function tooDeep(source: string, offset: number): never {
  throw new WorkflowInvalid(
    workflowError(positionInSource(source, offset), null, `nesting is deeper than ${WORKFLOW_LIMITS.maxDepth} levels`),
  );
}

function positionInSource(source: string, offset: number): Position {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < source.length; i++) {
    if (source.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

function describeYamlProblem(problem: YAMLError): string {
  switch (problem.code) {
    case "RESOURCE_EXHAUSTION":
      return `nesting is deeper than ${WORKFLOW_LIMITS.maxDepth} levels`;
    case "MULTIPLE_DOCS":
      return "a workflow file must contain exactly one YAML document";
    case "TAG_RESOLVE_FAILED":
      return `custom tags are not allowed (${problem.message})`;
    default:
      return `invalid YAML: ${problem.message}`;
  }
}

function offsetOf(node: { range?: readonly number[] | null }): number {
  return node.range?.[0] ?? 0;
}

function displayTag(tag: string): string {
  const core = "tag:yaml.org,2002:";
  return tag.startsWith(core) ? `!!${tag.slice(core.length)}` : tag;
}

/** Iterative on purpose: a recursive walk would reintroduce the stack risk. */
function checkTree(root: ParsedNode, fail: (offset: number, text: string) => never, source: string): void {
  const max = WORKFLOW_LIMITS.maxDepth;
  const stack: { node: ParsedNode; depth: number }[] = [{ node: root, depth: 0 }];
  for (let entry = stack.pop(); entry; entry = stack.pop()) {
    const { node, depth } = entry;
    const at = offsetOf(node);
    if (isAlias(node)) fail(at, `aliases are not allowed (found *${node.source})`);
    if (node.anchor) {
      // A collection's range starts at its first entry, which may be lines below its anchor.
      const anchorAt = source.lastIndexOf(`&${node.anchor}`, at);
      fail(anchorAt >= 0 ? anchorAt : at, `anchors are not allowed (found &${node.anchor})`);
    }
    if (node.tag) fail(at, `explicit tags are not allowed (found ${displayTag(node.tag)})`);
    if (isScalar(node)) continue;
    if (depth + 1 > max) fail(at, `nesting is deeper than ${max} levels`);

    const children: ParsedNode[] = [];
    if (isSeq(node)) {
      children.push(...(node.items as ParsedNode[]));
    } else if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        const key = pair.key as ParsedNode | null;
        if (!isScalar(key) || typeof key.value !== "string") {
          fail(key ? offsetOf(key) : at, "mapping keys must be strings");
        }
        if (seen.has(key.value)) {
          fail(offsetOf(key), `duplicate key ${quote(key.value)}; mapping keys must be unique`);
        }
        seen.add(key.value);
        children.push(key);
        if (pair.value) children.push(pair.value as ParsedNode);
      }
    }
    for (let i = children.length - 1; i >= 0; i--) {
      stack.push({ node: children[i] as ParsedNode, depth: depth + 1 });
    }
  }
}
