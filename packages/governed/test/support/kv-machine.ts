/**
 * The small key-value state machine the Raft tests and benchmarks replicate. Commands are JSON
 * `{op, key, value?}`; every keyed command is deduplicated exactly per `(client, seq)` with its outcome
 * recorded and replayed (governed.md §4.11 R-D2). Its whole state — data and sessions — is the snapshot.
 */
import type { Committed, LogEntry } from "../../src/index.ts";
import type { KvInput } from "../../src/index.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Encodes a KV command for `propose`. */
export function kvCommand(input: KvInput): Uint8Array {
  return enc.encode(JSON.stringify(input));
}

/** A replica of the KV store. */
export class KvMachine {
  data = new Map<string, string>();
  /** client → (seq → output) */
  sessions = new Map<string, Map<number, string>>();
  applied = 0;
  /** Entries applied without a recorded-outcome replay. */
  effects = 0;

  /** Folds one committed item; returns the output for an app entry (`null` for internal/install). */
  apply(c: Committed): string | null {
    if (c.kind === "install") {
      this.restore(c.snapshot.state);
      this.applied = c.snapshot.throughIndex;
      return null;
    }
    if (c.kind === "internal") {
      this.expect(c.index);
      return null;
    }
    return this.applyEntry(c.entry);
  }

  private expect(index: number): void {
    if (index !== this.applied + 1) throw new Error(`KvMachine: applied ${index} after ${this.applied}`);
    this.applied = index;
  }

  private applyEntry(e: LogEntry): string {
    this.expect(e.index);
    if (e.key !== null) {
      const s = this.sessions.get(e.key.client);
      const prior = s?.get(e.key.seq);
      if (prior !== undefined) return prior;
    }
    let input: KvInput;
    try {
      input = JSON.parse(dec.decode(e.command)) as KvInput;
    } catch {
      return "malformed";
    }
    let out: string;
    switch (input.op) {
      case "put":
        this.data.set(input.key, input.value);
        out = "ok";
        break;
      case "append":
        this.data.set(input.key, (this.data.get(input.key) ?? "") + input.value);
        out = "ok";
        break;
      case "get":
        out = this.data.get(input.key) ?? "";
        break;
      default:
        out = "unknown-op";
    }
    this.effects++;
    if (e.key !== null) {
      let s = this.sessions.get(e.key.client);
      if (s === undefined) {
        s = new Map();
        this.sessions.set(e.key.client, s);
      }
      s.set(e.key.seq, out);
    }
    return out;
  }

  /** The recorded outcome of `(client, seq)`, if applied. */
  outcome(client: string, seq: number): string | undefined {
    return this.sessions.get(client)?.get(seq);
  }

  /** Deterministic serialization of the whole state (the snapshot bytes). */
  snapshot(): Uint8Array {
    return enc.encode(this.stateText());
  }

  /** A canonical text of the state: equal states give equal text. */
  stateText(): string {
    const data = [...this.data].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const sessions = [...this.sessions]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([c, m]) => [c, [...m].sort((a, b) => a[0] - b[0])]);
    return JSON.stringify({ data, sessions });
  }

  private restore(bytes: Uint8Array): void {
    const s = JSON.parse(dec.decode(bytes)) as { data: [string, string][]; sessions: [string, [number, string][]][] };
    this.data = new Map(s.data);
    this.sessions = new Map(s.sessions.map(([c, m]) => [c, new Map(m)]));
  }
}
