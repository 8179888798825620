// Request bodies are JSON objects with each key given once. JSON.parse keeps the last of a repeated key, so
// {"leaf": "a", "maximumCost": 1, "leaf": "b"} would reserve at b while a reader of the text sees a — the API refuses
// it instead, naming the key. Keys that would reach an object's prototype when merged (`__proto__`, and
// `constructor.prototype`) are refused too, as fastify's own JSON parser refuses them.

/** Why a JSON text (already known to parse) cannot be a request body: the field path of the offending key and the problem. */
export interface JsonKeyProblem {
  readonly field: string;
  readonly problem: string;
}

type Frame = { kind: "object"; path: string; keys: Set<string>; expectKey: boolean; key: string } | { kind: "array"; path: string; index: number };

/** The path of a member: `a.b`, `a[2]`, or the key alone at the top. */
function memberPath(parent: Frame | undefined): string {
  if (parent === undefined) return "";
  if (parent.kind === "array") return `${parent.path}[${parent.index}]`;
  return parent.path === "" ? parent.key : `${parent.path}.${parent.key}`;
}

/**
 * The first repeated key in one object of `text`, or a key that would reach a prototype, as a field path in the
 * form the API's schema errors use (`resources[0].key`); null when there is none. `text` must be valid JSON (the
 * scan trusts its structure); linear in its length.
 */
export function jsonKeyProblem(text: string): JsonKeyProblem | null {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "{" || c === "[") {
      const path = memberPath(stack[stack.length - 1]);
      stack.push(c === "{" ? { kind: "object", path, keys: new Set(), expectKey: true, key: "" } : { kind: "array", path, index: 0 });
    } else if (c === "}" || c === "]") {
      stack.pop();
    } else if (c === ",") {
      const top = stack[stack.length - 1];
      if (top?.kind === "object") top.expectKey = true;
      else if (top?.kind === "array") top.index++;
    } else if (c === '"') {
      const start = i;
      for (i++; text[i] !== '"'; i++) if (text[i] === "\\") i++;
      const top = stack[stack.length - 1];
      if (top?.kind !== "object" || !top.expectKey) continue;
      const key = JSON.parse(text.slice(start, i + 1)) as string;
      top.expectKey = false;
      top.key = key;
      const field = memberPath(top);
      if (top.keys.has(key)) return { field, problem: "is given twice in one object; give each key once (JSON keeps only the last, which may not be the one meant)" };
      top.keys.add(key);
      if (key === "__proto__" || (key === "prototype" && top.path.split(".").pop() === "constructor")) {
        return { field, problem: "is not allowed (it would reach an object's prototype)" };
      }
    }
  }
  return null;
}
