// Fencing in practice (claims.md §2 rule 7): a small file store that checks the fencing token on every write.
// Whoever writes a file passes the token of its grant; the store remembers, per file, the highest token it has
// accepted (on disk, next to the file) and rejects a write stamped with an older one — so a holder that paused
// past its lease, while the key was granted to somebody else, cannot overwrite the newer holder's work.
// The store needs nothing from the claims service: tokens only ever rise per key, and that is all it checks.
//
// Run: npx -y pnpm@10 exec node packages/claims/examples/fenced-store.ts
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createClaims } from "../src/index.ts";

/** What a write answers: accepted, or rejected because a newer grant has written (or may write) the file. */
export type FencedWrite = { readonly ok: true } | { readonly ok: false; readonly reason: "stale-token"; readonly token: number; readonly highest: number };

/** A directory of files, each guarded by the highest fencing token that has written it. */
export class FencedStore {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  #fencePath(name: string): string {
    return join(this.#dir, `${encodeURIComponent(name)}.fence`);
  }

  /** The highest token accepted for `name` (0 before its first write). */
  highest(name: string): number {
    try {
      return Number(readFileSync(this.#fencePath(name), "utf8"));
    } catch {
      return 0;
    }
  }

  /** Writes `content` to `name` when `token` is at least the highest token seen for it; otherwise changes nothing. */
  write(name: string, token: number, content: string): FencedWrite {
    if (!Number.isSafeInteger(token) || token < 1) throw new RangeError(`token must be a positive safe integer, got ${String(token)}`);
    const highest = this.highest(name);
    if (token < highest) return { ok: false, reason: "stale-token", token, highest };
    const file = join(this.#dir, encodeURIComponent(name));
    writeFileSync(`${file}.tmp`, content);
    renameSync(`${file}.tmp`, file);
    if (token > highest) writeFileSync(this.#fencePath(name), String(token));
    return { ok: true };
  }

  /** The content of `name`, or `undefined` when it was never written. */
  read(name: string): string | undefined {
    try {
      return readFileSync(join(this.#dir, encodeURIComponent(name)), "utf8");
    } catch {
      return undefined;
    }
  }
}

/** The demo: a paused holder's late write is rejected once its lease lapsed and the key was re-granted. */
export function demo(): void {
  const dir = mkdtempSync(join(tmpdir(), "heddle-fenced-store-"));
  try {
    const store = new FencedStore(dir);
    const claims = createClaims();
    const a = claims.take({ holder: "numberer-a", resources: [{ key: "invoices.csv", mode: "exclusive" }], ttlMs: 30_000 }, 0);
    if (!a.ok) throw new Error("the first take was refused");
    const tokenA = a.grants[0]!.token;
    console.log(`numberer-a writes with token ${tokenA}:`, store.write("invoices.csv", tokenA, "1001\n").ok);
    // numberer-a pauses for 40 s (a long GC, a suspended laptop): its lease lapses, numberer-b is granted the file
    const b = claims.take({ holder: "numberer-b", resources: [{ key: "invoices.csv", mode: "exclusive" }], ttlMs: 30_000 }, 40_000);
    if (!b.ok) throw new Error("the re-grant was refused");
    const tokenB = b.grants[0]!.token;
    console.log(`numberer-b writes with token ${tokenB}:`, store.write("invoices.csv", tokenB, "1001\n1002\n").ok);
    const late = store.write("invoices.csv", tokenA, "1001\n1002-duplicate\n");
    console.log(`numberer-a wakes and writes with token ${tokenA}:`, late.ok ? "accepted" : `rejected (${late.reason}: highest is ${late.highest})`);
    console.log("invoices.csv:", JSON.stringify(store.read("invoices.csv")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) demo();
