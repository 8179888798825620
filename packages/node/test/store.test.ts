import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AttachmentId, EntitlementLedger, GroupId, Rational, ReplicaId, Weight, type MutationResult } from "@heddle/ledger";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { memoryStore } from "../src/memory-store.ts";
import { DatabaseSync } from "node:sqlite";
import { SQLITE_SCHEMA, sqliteStore, StoreLockedError } from "../src/sqlite-store.ts";
import { failingStore, InjectedCommitFailure, patchBytes, restoreLedger, StoreMismatchError, StoreStateError, type HeddleStore, type PersistedState, type ReservationRow } from "../src/store.ts";
import { seededRandom } from "@heddle/seam";

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "heddle-store-"));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const enc = new TextEncoder();
const dec = new TextDecoder();
const A = ReplicaId("peer-a");
const B = ReplicaId("peer-b");

function row(id: string, max: bigint, path: string[] = ["root→g1"], createdAt = 0): ReservationRow {
  return { id, leaf: GroupId("g1"), maximumCost: max, capturedPath: path.map(AttachmentId), createdAt };
}

/** A store that can be reopened: sqlite opens the same file again; memory hands back the same object (a "crash" keeps it). */
interface Opener {
  readonly name: string;
  open(): HeddleStore;
}

function sqliteOpener(): Opener {
  const path = join(tempDir(), "node.db");
  return { name: "sqlite", open: () => sqliteStore(path) };
}
function memoryOpener(epoch?: number): Opener {
  const s = memoryStore(epoch === undefined ? {} : { epoch });
  return { name: "memory", open: () => s };
}

const kinds: [string, () => Opener][] = [
  ["sqliteStore", sqliteOpener],
  ["memoryStore", () => memoryOpener()],
];

/** Plain, comparable form of a persisted state. */
function plain(p: PersistedState) {
  return {
    snapshot: p.snapshot === null ? null : dec.decode(p.snapshot),
    patches: p.patches.map((b) => dec.decode(b)),
    reservations: p.reservations.map((r) => ({ ...r, maximumCost: r.maximumCost.toString(), capturedPath: [...r.capturedPath] })),
  };
}

describe.each(kinds)("%s", (_name, make) => {
  it("round-trips patches, reservation rows (bigint costs, captured paths) and the snapshot across a reopen", () => {
    const o = make();
    let s = o.open();
    expect(s.boot(A, "gen").persisted.patches).toEqual([]);
    const big = (1n << 63n) - 1n;
    s.commit({
      patches: [
        { origin: "own", body: enc.encode("p1") },
        { origin: "merged", body: enc.encode("p2") },
      ],
      putReservations: [row("a/1/0", 10n, ["root→g1", "g1→g3"], 1234), row("a/1/1", big)],
    });
    s.commit({ patches: [{ origin: "own", body: enc.encode("p3") }], deleteReservations: ["a/1/0", "never-existed"] });
    s.close();
    s = o.open();
    const back = s.boot(A, "gen");
    expect(plain(back.persisted)).toEqual({
      snapshot: null,
      patches: ["p1", "p2", "p3"],
      reservations: [{ id: "a/1/1", leaf: "g1", maximumCost: big.toString(), capturedPath: ["root→g1"], createdAt: 0 }],
    });
    expect(typeof back.persisted.reservations[0]!.maximumCost).toBe("bigint");
    s.compact(enc.encode("S1"));
    s.commit({ patches: [{ origin: "own", body: enc.encode("p4") }] });
    s.close();
    s = o.open();
    expect(plain(s.boot(A, "gen").persisted)).toMatchObject({ snapshot: "S1", patches: ["p4"] });
    s.compact(enc.encode("S2"));
    s.compact(enc.encode("S3"));
    s.close();
    s = o.open();
    expect(plain(s.boot(A, "gen").persisted)).toMatchObject({ snapshot: "S3", patches: [] });
    s.close();
  });

  it("restoreLedger rebuilds genesis ⊔ snapshot ⊔ patches, before and after compaction", () => {
    const o = make();
    let s = o.open();
    s.boot(A, "gen");
    const genesis = EntitlementLedger.bootstrap(GroupId("root"), new Map([[A, 50n]]), "n");
    let live = genesis;
    const step = (r: MutationResult, merged = false) => {
      if (!r.ok) throw new Error(r.refusal.message);
      live = live.join(r.patch);
      s.commit({ patches: [{ origin: merged ? "merged" : "own", body: patchBytes(r.patch) }] });
    };
    step(live.prepare({ id: AttachmentId("e1"), parent: GroupId("root"), child: GroupId("g1"), weight: Weight.ONE }));
    step(live.activate(AttachmentId("e1")), true);
    step(live.seat(AttachmentId("e1"), Rational.ZERO));
    s.compact(patchBytes(live));
    step(live.delegate(A, AttachmentId("e1"), 20n));
    step(live.spend(A, GroupId("g1"), 5n));
    s.close();
    s = o.open();
    const back = restoreLedger(genesis, s.boot(A, "gen").persisted);
    expect(back.equals(live)).toBe(true);
    expect(back.holdings(GroupId("g1"), A)).toBe(15n);
    expect(() => restoreLedger(genesis, { snapshot: null, patches: [enc.encode("{not a ledger")], reservations: [] })).toThrow();
    s.close();
  });

  it("the boot counter rises by one per boot, across reopens", () => {
    const o = make();
    const epochs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const s = o.open();
      epochs.push(s.boot(A, "gen").epoch);
      if (i % 2 === 0) epochs.push(s.boot(A, "gen").epoch); // a second boot on one handle still counts
      s.close();
    }
    for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBe(epochs[i - 1]! + 1);
  });

  it("refuses a store of another replica or another genesis, and stays usable by its owner", () => {
    const o = make();
    let s = o.open();
    const first = s.boot(A, "gen").epoch;
    s.commit({ patches: [{ origin: "own", body: enc.encode("mine") }] });
    s.close();
    s = o.open();
    expect(() => s.boot(B, "gen")).toThrow(StoreMismatchError);
    expect(() => s.boot(A, "other-genesis")).toThrow(StoreMismatchError);
    const again = s.boot(A, "gen");
    expect(again.epoch).toBe(first + 1); // refused boots bump nothing
    expect(plain(again.persisted).patches).toEqual(["mine"]);
    s.close();
  });

  it("a transaction that fails midway leaves nothing: a patch and a duplicate reservation id in one commit", () => {
    const o = make();
    let s = o.open();
    s.boot(A, "gen");
    s.commit({ putReservations: [row("r1", 5n)] });
    expect(() =>
      s.commit({
        patches: [{ origin: "own", body: enc.encode("lost") }],
        putReservations: [row("r2", 7n), row("r1", 9n)],
        deleteReservations: ["r1"],
      }),
    ).toThrow();
    expect(() => s.commit({ putReservations: [row("r3", 1n), row("r3", 2n)] })).toThrow();
    expect(() => s.commit({ patches: [{ origin: "own", body: enc.encode("x") }], putReservations: [row("r4", 0n)] })).toThrow(RangeError);
    s.commit({ patches: [{ origin: "own", body: enc.encode("after") }] }); // the same handle still commits
    s.close();
    s = o.open();
    expect(plain(s.boot(A, "gen").persisted)).toEqual({
      snapshot: null,
      patches: ["after"],
      reservations: [{ id: "r1", leaf: "g1", maximumCost: "5", capturedPath: ["root→g1"], createdAt: 0 }],
    });
    s.close();
  });

  it("keeps this peer's own keeper slot (claims.md §3): the latest committed text comes back at boot, a failed transaction leaves the previous one", () => {
    const o = make();
    let s = o.open();
    expect(s.boot(A, "gen").persisted.keeperSlot).toBeUndefined();
    s.commit({ keeperSlot: "first" });
    s.commit({ keeperSlot: "second", patches: [{ origin: "own", body: enc.encode("p") }] });
    s.commit({ putReservations: [row("r1", 5n)] }); // a commit without a slot leaves it
    expect(() => s.commit({ keeperSlot: "lost", putReservations: [row("r1", 9n)] })).toThrow();
    expect(() => s.commit({ keeperSlot: 7 as unknown as string })).toThrow(TypeError);
    s.close();
    s = o.open();
    const { persisted } = s.boot(A, "gen");
    expect([persisted.keeperSlot, persisted.patches.map((b) => dec.decode(b))]).toEqual(["second", ["p"]]);
    s.close();
  });

  it("refuses commit and compact before boot", () => {
    const s = make().open();
    expect(() => s.commit({})).toThrow(StoreStateError);
    expect(() => s.compact(enc.encode("x"))).toThrow(StoreStateError);
    s.close();
  });

  it("failingStore throws on the chosen commits and leaves the inner store untouched", () => {
    const o = make();
    const inner = o.open();
    let fail = false;
    const s = failingStore(inner, () => fail);
    s.boot(A, "gen");
    s.commit({ patches: [{ origin: "own", body: enc.encode("kept") }] });
    fail = true;
    expect(() => s.commit({ patches: [{ origin: "own", body: enc.encode("dropped") }], putReservations: [row("r", 1n)] })).toThrow(InjectedCommitFailure);
    expect(s.durable).toBe(inner.durable);
    s.close();
    const t = o.open();
    expect(plain(t.boot(A, "gen").persisted)).toEqual({ snapshot: null, patches: ["kept"], reservations: [] });
    t.close();
  });
});

describe("memoryStore", () => {
  it("is not durable; its counter starts at opts.epoch and rises by one per boot", () => {
    const s = memoryStore({ epoch: 41 });
    expect(s.durable).toBe(false);
    expect(s.boot(A, "g").epoch).toBe(42);
    expect(s.boot(A, "g").epoch).toBe(43);
    expect(memoryStore().boot(A, "g").epoch).toBe(1);
    expect(() => memoryStore({ epoch: -1 })).toThrow(RangeError);
  });

  it("copies what it is given and what it hands back", () => {
    const s = memoryStore();
    s.boot(A, "g");
    const body = enc.encode("abc");
    s.commit({ patches: [{ origin: "own", body }] });
    body[0] = 0x7a;
    const first = s.boot(A, "g").persisted.patches[0]!;
    first[1] = 0x7a;
    expect(dec.decode(s.boot(A, "g").persisted.patches[0]!)).toBe("abc");
  });
});

describe("sqliteStore", () => {
  it("creates exactly the schema of node.md §9.2 in WAL mode, costs as decimal text", () => {
    const path = join(tempDir(), "schema.db");
    const s = sqliteStore(path);
    s.boot(A, "g");
    s.commit({ putReservations: [row("r", 123456789012345678n, ["root→g1", "g1→g2"], 5)] });
    s.close();
    const db = new DatabaseSync(path);
    const norm = (x: string) => x.replace(/\s+/g, " ").trim();
    const tables = (db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string; sql: string }[]).map(
      (t) => [t.name, norm(t.sql)],
    );
    const expected = SQLITE_SCHEMA.split(";")
      .map((x) => norm(x).replace("CREATE TABLE IF NOT EXISTS", "CREATE TABLE"))
      .filter((x) => x.length > 0)
      .map((x) => [x.split(" ")[2], x])
      .sort(([a], [b]) => (a! < b! ? -1 : 1));
    expect(tables).toEqual(expected);
    expect(db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    expect(db.prepare("SELECT id, leaf, max_cost, typeof(max_cost) AS t, path, created_ms FROM reservations").get()).toEqual({
      id: "r",
      leaf: "g1",
      max_cost: "123456789012345678",
      t: "text",
      path: '["root→g1","g1→g2"]',
      created_ms: 5,
    });
    expect(db.prepare("SELECT replica, genesis, boot FROM meta").get()).toEqual({ replica: "peer-a", genesis: "g", boot: 1 });
    db.close();
  });

  it("is durable and refuses a second replica after a process-level reopen", () => {
    const path = join(tempDir(), "x.db");
    const s = sqliteStore(path);
    expect(s.durable).toBe(true);
    s.boot(A, "g");
    s.close();
    expect(() => s.commit({})).toThrow(StoreStateError);
    const t = sqliteStore(path);
    expect(() => t.boot(B, "g")).toThrow(StoreMismatchError);
    t.close();
  });

  // review s28, finding 3: without a lock two nodes could boot one replica's store and each spend its holdings
  it("a second store on a file another open store holds is refused, naming the path, until the first closes", () => {
    const path = join(tempDir(), "locked.db");
    const first = sqliteStore(path);
    const { epoch } = first.boot(A, "g");
    first.commit({ patches: [{ origin: "own", body: enc.encode("mine") }] });
    let refusal: unknown;
    try {
      sqliteStore(path).boot(A, "g");
    } catch (e) {
      refusal = e;
    }
    expect(refusal, "the second store booted the replica the first one runs").toBeInstanceOf(Error);
    expect(refusal).toBeInstanceOf(StoreLockedError);
    expect((refusal as StoreLockedError).path).toBe(path);
    expect((refusal as Error).message).toContain(path);
    expect((refusal as Error).message).toMatch(/Stop the other node using this file/);
    // the refused opener changed nothing: the first still commits, and its boot counter was not bumped
    first.commit({ patches: [{ origin: "own", body: enc.encode("still mine") }] });
    first.close();
    const again = sqliteStore(path);
    const booted = again.boot(A, "g");
    expect(booted.epoch).toBe(epoch + 1);
    expect(booted.persisted.patches.map((b) => dec.decode(b))).toEqual(["mine", "still mine"]);
    again.close();
  });

  it("the lock holds across processes, and a killed holder releases it", async () => {
    const path = join(tempDir(), "locked-by-child.db");
    const child = spawn(process.execPath, ["--no-warnings", WRITER, path], { stdio: ["ignore", "pipe", "pipe"] });
    const closed = new Promise<void>((res) => child.on("close", () => res()));
    try {
      await new Promise<void>((res, rej) => {
        let out = "";
        child.stdout.setEncoding("utf8");
        child.stdout.on("data", (d: string) => {
          out += d;
          if (out.includes("\n")) res();
        });
        child.on("error", rej);
        child.on("close", (code) => rej(new Error(`writer ended before booting (code ${code})`)));
      });
      expect(() => sqliteStore(path)).toThrow(StoreLockedError);
    } finally {
      child.kill("SIGKILL");
      await closed;
    }
    const s = sqliteStore(path);
    expect(s.boot(ReplicaId("writer"), "crash-test-genesis").epoch).toBe(2);
    s.close();
  });
});

// ---- model-based test: both stores against a tiny model ----

type Cmd =
  | { kind: "commit"; patches: string[]; puts: { id: string; max: bigint }[]; deletes: string[] }
  | { kind: "compact"; body: string }
  | { kind: "reopen" };

const idArb = fc.constantFrom("r0", "r1", "r2", "r3", "r4");
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("commit" as const),
      patches: fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
      puts: fc.array(fc.record({ id: idArb, max: fc.bigInt({ min: 1n, max: (1n << 63n) - 1n }) }), { maxLength: 2 }),
      deletes: fc.array(idArb, { maxLength: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("compact" as const), body: fc.string({ maxLength: 6 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: "reopen" as const }) },
);

interface Model {
  epoch: number;
  snapshot: string | null;
  patches: string[];
  rows: Map<string, bigint>;
}

function checkAgainstModel(opener: Opener, cmds: Cmd[]): void {
  let s = opener.open();
  const m: Model = { epoch: s.boot(A, "gen").epoch, snapshot: null, patches: [], rows: new Map() };
  for (const c of cmds) {
    if (c.kind === "commit") {
      const ids = c.puts.map((p) => p.id);
      const dup = ids.some((id, i) => m.rows.has(id) || ids.indexOf(id) !== i);
      const tx = {
        patches: c.patches.map((p) => ({ origin: "own" as const, body: enc.encode(p) })),
        putReservations: c.puts.map((p) => row(p.id, p.max)),
        deleteReservations: c.deletes,
      };
      if (dup) {
        expect(() => s.commit(tx)).toThrow();
      } else {
        s.commit(tx);
        m.patches.push(...c.patches);
        for (const p of c.puts) m.rows.set(p.id, p.max);
        for (const d of c.deletes) m.rows.delete(d);
      }
    } else if (c.kind === "compact") {
      s.compact(enc.encode(c.body));
      m.snapshot = c.body;
      m.patches = [];
    } else {
      s.close();
      s = opener.open();
      const b = s.boot(A, "gen");
      m.epoch += 1;
      expect(b.epoch).toBe(m.epoch);
      expect(plain(b.persisted)).toEqual({
        snapshot: m.snapshot,
        patches: m.patches,
        reservations: [...m.rows]
          .sort(([x], [y]) => (x < y ? -1 : 1))
          .map(([id, max]) => ({ id, leaf: "g1", maximumCost: max.toString(), capturedPath: ["root→g1"], createdAt: 0 })),
      });
    }
  }
  s.close();
}

describe("store model test (fast-check)", () => {
  const runs = Number(process.env.HEDDLE_RUNS ?? 40);
  it("memoryStore matches the model over commit/compact/reopen sequences", () => {
    fc.assert(
      fc.property(fc.array(cmdArb, { maxLength: 30 }), (cmds) => checkAgainstModel(memoryOpener(), [...cmds, { kind: "reopen" }])),
      { numRuns: runs * 5 },
    );
  });
  it("sqliteStore matches the model over commit/compact/reopen sequences", () => {
    fc.assert(
      fc.property(fc.array(cmdArb, { maxLength: 20 }), (cmds) => checkAgainstModel(sqliteOpener(), [...cmds, { kind: "reopen" }])),
      { numRuns: runs },
    );
  }, Math.max(120_000, runs * 1_000)); // fsync per commit: nightly sizes need more than the default
});

// ---- crash test with real processes ----

const WRITER = fileURLToPath(new URL("./fixtures/store-writer.ts", import.meta.url));

interface ChildRun {
  bootEpoch: number | null;
  acks: string[];
}

/** Runs the writer until `killAfterMs` (counted from its boot line, or from spawn when `fromSpawn`), then SIGKILLs it. */
function runAndKill(path: string, killAfterMs: number, fromSpawn: boolean): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--no-warnings", WRITER, path], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let killed = false;
    let timer: NodeJS.Timeout | undefined;
    const kill = () => {
      killed = true;
      child.kill("SIGKILL");
    };
    if (fromSpawn) timer = setTimeout(kill, killAfterMs);
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (d: string) => {
      const before = out;
      out += d;
      if (!fromSpawn && timer === undefined && !before.includes("boot ") && out.includes("\n")) timer = setTimeout(kill, killAfterMs);
    });
    child.stderr.on("data", (d: string) => (err += d));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      if (!killed || signal !== "SIGKILL") {
        reject(new Error(`writer ended by itself (code ${code}, signal ${signal}): ${err}`));
        return;
      }
      // Only complete lines count: a line cut by the kill was never fully acknowledged.
      const lines = out.split("\n").slice(0, -1);
      const boot = lines.find((l) => l.startsWith("boot "));
      resolve({
        bootEpoch: boot === undefined ? null : Number(boot.slice(5)),
        acks: lines.filter((l) => l.startsWith("ack ")).map((l) => l.slice(4)),
      });
    });
  });
}

describe("sqliteStore crash safety (SIGKILL of a writing process)", () => {
  const kills = Number(process.env.HEDDLE_KILLS ?? 20);
  const seed = Number(process.env.HEDDLE_SEED ?? 20261129);

  it(`keeps every acknowledged commit over ${kills} random kills (seed ${seed})`, async () => {
    const rnd = seededRandom(seed);
    const path = join(tempDir(), "crash.db");
    const acked = new Set<string>();
    let lastEpoch = 0;
    let totalAcks = 0;
    for (let k = 0; k < kills; k++) {
      const fromSpawn = rnd() < 0.2;
      const delay = fromSpawn ? Math.floor(rnd() * 400) : Math.floor(rnd() * 120);
      const run = await runAndKill(path, delay, fromSpawn);
      const why = `seed ${seed}, kill ${k} (${fromSpawn ? "from spawn" : "after boot"} +${delay} ms)`;
      for (const a of run.acks) acked.add(a);
      totalAcks += run.acks.length;

      const check = new DatabaseSync(path);
      expect(check.prepare("PRAGMA integrity_check").get(), why).toEqual({ integrity_check: "ok" });
      check.close();
      const s = sqliteStore(path);
      const { epoch, persisted } = s.boot(ReplicaId("writer"), "crash-test-genesis");
      s.close();
      if (run.bootEpoch !== null) {
        expect(run.bootEpoch, why).toBeGreaterThan(lastEpoch);
        expect(epoch, why).toBe(run.bootEpoch + 1);
      } else {
        expect(epoch, why).toBeGreaterThan(lastEpoch);
      }
      lastEpoch = epoch;

      const present = new Set<string>(persisted.snapshot === null ? [] : (JSON.parse(dec.decode(persisted.snapshot)) as string[]));
      for (const p of persisted.patches) present.add(JSON.parse(dec.decode(p)) as string);
      const missing = [...acked].filter((a) => !present.has(a));
      expect(missing, why).toEqual([]);

      // The row of commit i and the deletion of row i−1 are atomic with the patch of commit i: each
      // boot leaves exactly the row of its last durable commit, whose patch is present, and that commit
      // is the last acknowledged one or the one after it (durable, killed before its ack was written).
      if (run.bootEpoch !== null) {
        const mine = persisted.reservations.filter((r) => r.id.startsWith(`${run.bootEpoch}/`));
        if (run.acks.length === 0) expect(mine.length, why).toBeLessThanOrEqual(1);
        else expect(mine.length, why).toBe(1);
        for (const r of mine) {
          expect(present.has(r.id), why).toBe(true);
          const i = Number(r.id.split("/")[1]);
          const lastAck = run.acks.length === 0 ? -1 : Number(run.acks[run.acks.length - 1]!.split("/")[1]);
          expect([lastAck, lastAck + 1], why).toContain(i);
          expect(r.maximumCost, why).toBe(BigInt(i + 1));
        }
      }
    }
    expect(totalAcks).toBeGreaterThan(0);
  }, Math.max(120_000, kills * 3_000));
});
