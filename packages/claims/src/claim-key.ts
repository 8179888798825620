import { MAX_ID_LENGTH } from "./limits.ts";

/**
 * A key as the table compares it: the caller's string with surrounding white space
 * trimmed and nothing else changed (claims.md §1). Two spellings stay two keys.
 */
export function claimKey(raw: string): string {
  return raw.trim();
}

/**
 * Why `s` cannot serve as an id (key, holder, scope, peer, part, item), or
 * `undefined` when it can: it must be a non-empty, well-formed UTF-16 string of at
 * most `MAX_ID_LENGTH` code units.
 */
export function idProblem(s: unknown, what: string): string | undefined {
  if (typeof s !== "string") return `${what} must be a string`;
  if (s.length === 0) return `${what} must not be empty`;
  if (s.length > MAX_ID_LENGTH) return `${what} is longer than ${MAX_ID_LENGTH} code units`;
  if (!isWellFormedUtf16(s)) return `${what} is not well-formed UTF-16`;
  return undefined;
}

/**
 * Orders strings by UTF-16 code units (JS `<`), never by locale, so every peer
 * sorts alike (claims.md §1, ledger.md §2.2).
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Whether `s` has no unpaired surrogate (so it encodes to UTF-8 without loss). */
export function isWellFormedUtf16(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d < 0xdc00 || d > 0xdfff) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return false;
    }
  }
  return true;
}
