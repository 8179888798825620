/**
 * A scripted single-member `RaftNode` for control-plane tests that need Raft to misbehave on cue (§5.4 C4, C6, C7):
 * every call is counted; each `propose` follows the next step of a plan — commit, stall (append, never commit or
 * answer until released), append-then-lose (append uncommitted, reject `LeadershipLostError`), hang (append
 * nothing, never answer), or too-large (append nothing, reject `PayloadTooLargeError`). Committed entries reach
 * `committedFrom` in index order, like the real driver — no further than `replayTo` allows, which stands in for a
 * slow replay after a restart.
 */
import { WatchCell } from "@heddle/seam";
import type { Timers } from "@heddle/node";
import { LeadershipLostError, NodeShutdownError, PayloadTooLargeError, ProposalAbortedError } from "../../src/index.ts";
import type { ClusterConfig, Committed, LogEntry, LogIndex, ProposalKey, RaftNode, RaftTraceEvent, Role, SnapshotStall } from "../../src/index.ts";

/** What the next `propose` does. */
export type ProposeStep = "commit" | "stall" | "append-then-lose" | "hang" | "too-large";

export class StubRaft implements RaftNode {
  readonly id: string;
  readonly role = new WatchCell<Role>("leader");
  readonly leader: WatchCell<string | null>;
  readonly commitIndex = new WatchCell<LogIndex>(0);
  readonly membership: WatchCell<ClusterConfig>;
  readonly started = Promise.resolve();
  /** Every call made on this node, by method name. */
  readonly calls = new Map<string, number>();
  /** The log: committed entries first, then held (appended, uncommitted) ones. */
  readonly log: LogEntry[] = [];
  /** Steps for the next proposals; when empty, `commit`. */
  readonly plan: ProposeStep[] = [];
  readonly snapshots: { throughIndex: LogIndex; state: Uint8Array }[] = [];
  /**
   * When set, a keyed proposal whose exact bytes an entry already carries under the same key is answered with that
   * entry's index and appends nothing, as the leader's dedup cache does (R-D4; its cache is refilled from the log's
   * tail after a restart). `coalesced` counts them.
   */
  coalesce = false;
  coalesced = 0;
  #committed = 0;
  /** `committedFrom` hands out committed entries only up to this index (see `replayTo`). */
  #replayThrough = Number.POSITIVE_INFINITY;
  #closed = false;
  readonly #timers: Timers;
  readonly #wake = new Set<() => void>();
  readonly #stalled: { index: LogIndex; resolve(v: { index: LogIndex; term: number }): void }[] = [];

  constructor(id: string, timers: Timers) {
    this.id = id;
    this.#timers = timers;
    this.leader = new WatchCell<string | null>(id);
    this.membership = new WatchCell<ClusterConfig>({ voters: [id], learners: [] });
  }

  #count(m: string): void {
    this.calls.set(m, (this.calls.get(m) ?? 0) + 1);
  }

  /** Total calls on every method. */
  get totalCalls(): number {
    let n = 0;
    for (const v of this.calls.values()) n += v;
    return n;
  }

  #append(command: Uint8Array, key: ProposalKey | null): LogEntry {
    const e: LogEntry = { index: this.log.length + 1, term: 1, kind: "app", key, command, stampedAt: this.#timers.now() };
    this.log.push(e);
    return e;
  }

  /**
   * Commits every appended entry (held ones included) and answers stalled proposals — unless `answer` is false:
   * then they stay unanswered (the commit reached `committedFrom` before the proposer heard of it) until
   * `answerStalled()`.
   */
  commitAll(o: { answer?: boolean } = {}): void {
    this.#committed = this.log.length;
    this.commitIndex.set(this.#committed);
    if (o.answer !== false) this.answerStalled();
    for (const w of [...this.#wake]) w();
    this.#wake.clear();
  }

  /** Answers every stalled proposal with the index it was appended at. */
  answerStalled(): void {
    for (const s of this.#stalled.splice(0)) s.resolve({ index: s.index, term: 1 });
  }

  /**
   * Lets `committedFrom` hand out committed entries only up to `index` from now on (`Infinity`: all): a replay
   * that has not caught up with the commit index yet, as after a restart over a long log.
   */
  replayTo(index: LogIndex): void {
    this.#replayThrough = index;
    for (const w of [...this.#wake]) w();
    this.#wake.clear();
  }

  /** Appends and commits raw bytes outside any call (a foreign or hand-built entry). */
  commitRaw(command: Uint8Array, key: ProposalKey | null = null): LogIndex {
    const e = this.#append(command, key);
    this.commitAll();
    return e.index;
  }

  propose(command: Uint8Array, key: ProposalKey | null, signal?: AbortSignal): Promise<{ index: LogIndex; term: number }> {
    this.#count("propose");
    if (this.#closed) return Promise.reject(new NodeShutdownError("closed"));
    if (this.coalesce && key !== null) {
      const same = (b: Uint8Array): boolean => b.length === command.length && b.every((x, i) => x === command[i]);
      const earlier = this.log.find((e) => e.key !== null && e.key.client === key.client && e.key.seq === key.seq && same(e.command));
      if (earlier !== undefined) {
        this.coalesced++;
        return Promise.resolve({ index: earlier.index, term: earlier.term });
      }
    }
    const step = this.plan.shift() ?? "commit";
    return new Promise((resolve, reject) => {
      signal?.addEventListener("abort", () => reject(new ProposalAbortedError("aborted after send; the command may still commit")), { once: true });
      switch (step) {
        case "commit": {
          const e = this.#append(command, key);
          this.commitAll();
          return resolve({ index: e.index, term: 1 });
        }
        case "stall": {
          const e = this.#append(command, key);
          this.#stalled.push({ index: e.index, resolve });
          return;
        }
        case "append-then-lose":
          this.#append(command, key);
          return reject(new LeadershipLostError("leadership was lost before the request was confirmed; it may still commit"));
        case "hang":
          return;
        case "too-large":
          return reject(new PayloadTooLargeError("the command cannot fit one frame"));
      }
    });
  }

  committedFrom(fromIndex: LogIndex): AsyncIterable<Committed> {
    this.#count("committedFrom");
    const self = this;
    let next = Math.max(1, fromIndex);
    return {
      [Symbol.asyncIterator](): AsyncIterator<Committed> {
        return {
          async next(): Promise<IteratorResult<Committed>> {
            for (;;) {
              if (self.#closed) return { done: true, value: undefined };
              if (next <= self.#committed && next <= self.#replayThrough) {
                const e = self.log[next - 1]!;
                next++;
                return { done: false, value: { kind: "entry", entry: e } };
              }
              await new Promise<void>((r) => self.#wake.add(r));
            }
          },
        };
      },
    };
  }

  async readIndex(): Promise<LogIndex> {
    this.#count("readIndex");
    return this.#committed;
  }

  async changeMembership(target: ClusterConfig): Promise<ClusterConfig> {
    this.#count("changeMembership");
    return target;
  }

  async transferLeadership(target: string): Promise<void> {
    this.#count("transferLeadership");
    if (target !== this.id) throw new Error("StubRaft: a single member cannot transfer leadership");
  }

  publishSnapshot(s: { throughIndex: LogIndex; state: Uint8Array }): void {
    this.#count("publishSnapshot");
    this.snapshots.push(s);
  }

  readonly trace: AsyncIterable<RaftTraceEvent> = { [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }) };

  refusedFrames(): ReadonlyMap<string, number> {
    this.#count("refusedFrames");
    return new Map();
  }

  snapshotStalls(): readonly SnapshotStall[] {
    this.#count("snapshotStalls");
    return [];
  }

  subscriberErrors(): number {
    this.#count("subscriberErrors");
    return 0;
  }

  async close(): Promise<void> {
    this.#count("close");
    this.#closed = true;
    for (const w of [...this.#wake]) w();
  }
}
