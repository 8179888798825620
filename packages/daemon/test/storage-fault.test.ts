// Storage faults mid-run (issue 17): the store's disk fills up or turns read-only while the daemon serves
// reservations and its scheduler writes. Pass (node.md §9.4): the node fails closed — writes answer 503
// with a message saying to restart, reads keep working, the log says the store failed — nothing
// acknowledged is lost, and after a restart on a writable disk the peer carries on from its store.
//
// Two ways to make the disk fail:
// - a fault-injecting store wrapper around the real SQLite store (portable: runs everywhere, as any user;
//   it throws what SQLite throws for a full or read-only disk);
// - a real tiny tmpfs filled up, then remounted read-only (Linux as root with mount rights only; skipped
//   elsewhere, saying why).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readlinkSync, mkdirSync, mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HeddleClient } from "@heddle/client";
import type { RaftStorage } from "@heddle/governed";
import { sqliteStore, type HeddleStore } from "@heddle/node";
import { initCluster, loadConfig, startDaemon, type DaemonConfig, type Logger, type RunningDaemon } from "../src/index.ts";
import { onEphemeralPorts } from "./support/embedded.ts";
import { canMount, fillDisk } from "../../governed/test/support/tmpfs.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A logger that keeps every line (the operator's view of the failure). */
function recordingLogger(lines: string[]): Logger {
  const rec = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const l: Logger = { debug: rec("debug"), info: rec("info"), warn: rec("warn"), error: rec("error"), child: () => l } as unknown as Logger;
  return l;
}

type Fault = null | "full" | "readonly";

/** The real SQLite store, failing every write the way SQLite does while `fault` is set. */
function faultyStore(path: string, fault: { mode: Fault }): HeddleStore {
  const inner = sqliteStore(path);
  const fail = () => {
    const e = new Error(fault.mode === "full" ? "database or disk is full" : "attempt to write a readonly database") as Error & { code: string; errcode: number };
    e.code = "ERR_SQLITE_ERROR";
    e.errcode = fault.mode === "full" ? 13 : 8;
    throw e;
  };
  return {
    get durable() {
      return inner.durable;
    },
    boot: (self, genesis) => inner.boot(self, genesis),
    commit(tx) {
      if (fault.mode !== null) fail();
      inner.commit(tx);
    },
    compact(state) {
      if (fault.mode !== null) fail();
      inner.compact(state);
    },
    close: () => inner.close(),
  };
}

async function cluster(storeDir?: string): Promise<{ config: DaemonConfig; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), "heddle-store-fault-"));
  dirs.push(dir);
  const [peer] = await initCluster({ dir: join(dir, "c"), peers: 1, mode: "static", supply: 1_000_000n, tree: "tenant-a=1,tenant-a>batch=1" });
  let config = onEphemeralPorts(loadConfig(peer!.config));
  // The scheduler keeps writing the whole time (a standing demand): the fault hits a running peer.
  config = { ...config, schedulerIntervalMs: 50 };
  if (storeDir !== undefined) config = { ...config, storeDir };
  return { config, dir };
}

interface Acked {
  spent: bigint;
  open: Map<string, bigint>;
}

async function status(c: HeddleClient) {
  return (await c.status()) as { failed: boolean; leafSpentTotal: string; mintedTotal: string; ledgerDigest: string };
}

/** Stands demand on batch and waits until `amount` is available there. */
async function fund(c: HeddleClient, amount: bigint): Promise<void> {
  await c.demand({ leaf: "batch", targetOutstanding: 100_000, maximumUsefulGrant: 1_000 });
  for (let i = 0; i < 600; i++) {
    const h = (await c.holdings("batch")) as { groups: { available: string }[] };
    if (BigInt(h.groups[0]!.available) >= amount) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("batch never got entitlement");
}

/** Acknowledged work: charges completed and a reservation left open, as the client saw them. */
async function work(c: HeddleClient, acked: Acked, rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    const a = await c.reserve("batch", 10);
    const done = (await c.complete(a.id, 3 + (i % 5))) as { charged: string };
    acked.spent += BigInt(done.charged);
    const b = await c.reserve("batch", 7);
    acked.open.set(b.id, 7n);
  }
}

/** While the store fails: the peer answers writes with 503 saying to restart, keeps serving reads, and says so in its status and log. */
async function expectFailedClosed(c: HeddleClient, acked: Acked, log: string[]): Promise<void> {
  // The first write after the fault meets the failing store (or the scheduler met it first).
  const r = await c.raw("POST", "/v1/reservations", { leaf: "batch", maximumCost: 5 });
  expect(r.status).toBe(503);
  expect(r.body).toMatchObject({ error: "refused", refusal: { kind: "closed" }, message: expect.stringMatching(/failed closed.*restart/) });
  const [id] = [...acked.open.keys()];
  const done = await c.raw("POST", "/v1/reservations/complete", { id, actualCost: 1 });
  expect(done.status).toBe(503);
  const cancel = await c.raw("POST", "/v1/reservations/cancel", { id });
  expect(cancel.status).toBe(503);
  const st = await status(c);
  expect(st.failed).toBe(true);
  // Nothing the failed writes tried was installed: the view still shows exactly the acknowledged charges.
  expect(BigInt(st.leafSpentTotal)).toBe(acked.spent);
  expect((await c.raw("GET", "/v1/holdings?group=batch")).status).toBe(200);
  expect((await c.raw("GET", "/v1/tree")).status).toBe(200);
  expect(log.some((l) => /^error store commit failed: the node has failed closed; restart it .*(disk is full|readonly|read-only|No space)/i.test(l))).toBe(true);
}

/** After a restart on a writable store: every acknowledged charge and open reservation is there, and the peer writes again. */
async function expectRecovered(d: RunningDaemon, acked: Acked, minted: string): Promise<void> {
  const c = new HeddleClient({ url: d.url, token: d.token });
  try {
    const st = await status(c);
    expect(st.failed).toBe(false);
    expect(st.mintedTotal).toBe(minted);
    expect(BigInt(st.leafSpentTotal)).toBe(acked.spent);
    const open = (await c.reservations()) as { reservations: { id: string; maximumCost: string }[] };
    const ids = new Map(open.reservations.map((r) => [r.id, BigInt(r.maximumCost)]));
    for (const [id, max] of acked.open) expect(ids.get(id)).toBe(max);
    // The acknowledged open reservations complete normally, exactly once.
    for (const id of acked.open.keys()) {
      expect(await c.complete(id, 2)).toMatchObject({ charged: "2", outcome: "charged" });
      acked.spent += 2n;
    }
    acked.open.clear();
    expect(BigInt((await status(c)).leafSpentTotal)).toBe(acked.spent);
    await work(c, acked, 2);
    expect(BigInt((await status(c)).leafSpentTotal)).toBe(acked.spent);
  } finally {
    c.close();
  }
}

describe("storage faults (fault-injecting store wrapper over SQLite)", () => {
  for (const mode of ["full", "readonly"] as const) {
    it(`disk ${mode === "full" ? "full" : "read-only"} mid-run: fails closed, loses nothing acknowledged, recovers after a restart`, async () => {
      const { config } = await cluster();
      const path = join(config.storeDir, "ledger.sqlite");
      mkdirSync(config.storeDir, { recursive: true });
      const fault: { mode: Fault } = { mode: null };
      const log: string[] = [];
      const d1 = await startDaemon(config, { logger: recordingLogger(log), store: faultyStore(path, fault) });
      const c1 = new HeddleClient({ url: d1.url, token: d1.token });
      const acked: Acked = { spent: 0n, open: new Map() };
      let minted: string;
      try {
        await fund(c1, 200n);
        await work(c1, acked, 5);
        minted = (await status(c1)).mintedTotal;
        fault.mode = mode;
        await expectFailedClosed(c1, acked, log);
      } finally {
        c1.close();
        await d1.close();
      }
      fault.mode = null;
      const d2 = await startDaemon(config, { logger: recordingLogger([]) });
      try {
        await expectRecovered(d2, acked, minted);
      } finally {
        await d2.close();
      }
    }, 120_000);
  }

  it("keeper claim writes on a failed-closed peer answer 503 refused/closed saying to restart, like every write", async () => {
    const { config: base } = await cluster();
    const config: DaemonConfig = { ...base, claims: { ...base.claims, keeperRules: { invoices: "stays-put" } } };
    mkdirSync(config.storeDir, { recursive: true });
    const fault: { mode: Fault } = { mode: null };
    const d = await startDaemon(config, { logger: recordingLogger([]), store: faultyStore(join(config.storeDir, "ledger.sqlite"), fault) });
    const c = new HeddleClient({ url: d.url, token: d.token });
    try {
      const first = await c.raw("POST", "/v1/claims/keeper", { part: "invoices" });
      expect(first.status).toBe(200);
      fault.mode = "full";
      for (const [path, body] of [["/v1/claims/keeper", { part: "invoices", take: true }], ["/v1/claims/keeper/close", { part: "invoices" }]] as const) {
        const r = await c.raw("POST", path, body);
        expect({ path, status: r.status }).toEqual({ path, status: 503 });
        expect(r.body).toMatchObject({ error: "refused", refusal: { kind: "closed" }, message: expect.stringMatching(/failed closed.*restart it/) });
      }
      // reads keep working: the claim is as it was before the refused writes
      const look = await c.raw("GET", "/v1/claims/keeper?part=invoices");
      expect(look.status).toBe(200);
      expect((look.body as { claim: unknown }).claim).toEqual((first.body as { claim: unknown }).claim);
    } finally {
      c.close();
      await d.close();
    }
  }, 120_000);

  /**
   * A daemon with keeper parts "invoices" and "reminders" takes "reminders", then the disk fills before its stop: the
   * stop cannot write the claim closed, so the store keeps it open. Returns the config without "reminders" to restart
   * on, the store's path and the fault switch (left "full").
   */
  async function claimLeftOpenOnDroppedPart(): Promise<{ config: DaemonConfig; store: string; fault: { mode: Fault } }> {
    const { config: base } = await cluster();
    const parts = (keeperRules: Record<string, "stays-put">): DaemonConfig => ({ ...base, claims: { ...base.claims, keeperRules } });
    mkdirSync(base.storeDir, { recursive: true });
    const fault: { mode: Fault } = { mode: null };
    const store = join(base.storeDir, "ledger.sqlite");
    const d = await startDaemon(parts({ invoices: "stays-put", reminders: "stays-put" }), { logger: recordingLogger([]), store: faultyStore(store, fault) });
    const c = new HeddleClient({ url: d.url, token: d.token });
    expect((await c.raw("POST", "/v1/claims/keeper", { part: "reminders", take: true })).status).toBe(200);
    c.close();
    fault.mode = "full";
    await d.close();
    return { config: parts({ invoices: "stays-put" }), store, fault };
  }

  it("a keeper claim left open on disk, on a part since removed from the config, is closed at the next start and logged", async () => {
    const { config, store, fault } = await claimLeftOpenOnDroppedPart();
    fault.mode = null;
    const lines: string[] = [];
    const again = await startDaemon(config, { logger: recordingLogger(lines), store: faultyStore(store, fault) });
    try {
      expect(lines.filter((l) => l.includes("keeper claims closed at start"))).toEqual([expect.stringMatching(/^warn .*no longer in claims\.keeper\.parts.*"parts":"reminders"/)]);
    } finally {
      await again.close();
    }
  }, 120_000);

  it("a boot-time close the store refuses is logged: the node has failed closed before the daemon subscribed to its events", async () => {
    const { config, store, fault } = await claimLeftOpenOnDroppedPart();
    // still full at the restart: the node's boot close of "reminders" cannot be written
    const lines: string[] = [];
    const again = await startDaemon(config, { logger: recordingLogger(lines), store: faultyStore(store, fault) }).catch((e: unknown) => e);
    if (again instanceof Error) throw new Error(`the daemon did not start on the full store: ${again.message}`);
    try {
      expect(lines.filter((l) => l.includes("failed closed"))).toEqual([expect.stringMatching(/^error store commit failed at start: the node has failed closed; restart it/)]);
    } finally {
      fault.mode = null;
      await (again as Awaited<ReturnType<typeof startDaemon>>).close();
    }
  }, 120_000);
});

/** The governed Raft log (the real segmented store), failing every write the way the file system does while `fault` is set. */
function faultyRaftLog(fault: { mode: Fault }): (inner: RaftStorage) => RaftStorage {
  return (inner) => {
    const guard = async <T>(write: () => Promise<T>): Promise<T> => {
      if (fault.mode === null) return write();
      const e = new Error(fault.mode === "full" ? "ENOSPC: no space left on device, write" : "EROFS: read-only file system, write") as NodeJS.ErrnoException;
      e.code = fault.mode === "full" ? "ENOSPC" : "EROFS";
      throw e;
    };
    return {
      load: () => inner.load(),
      saveTermAndVote: (t, v) => guard(() => inner.saveTermAndVote(t, v)),
      append: (es) => guard(() => inner.append(es)),
      truncateFrom: (i) => guard(() => inner.truncateFrom(i)),
      saveSnapshot: (snap) => guard(() => inner.saveSnapshot(snap)),
      discardThrough: (i) => guard(() => inner.discardThrough(i)),
      close: () => inner.close(),
    };
  };
}

describe("storage faults in governed mode (fault-injecting wrapper over the segmented Raft log)", () => {
  for (const mode of ["full", "readonly"] as const) {
    it(`disk ${mode === "full" ? "full" : "read-only"} under the Raft log: fails closed naming the error, loses no acknowledged claim, recovers after a restart`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "heddle-store-fault-raftlog-"));
      dirs.push(dir);
      const [peer] = await initCluster({ dir: join(dir, "c"), peers: 1, mode: "governed" });
      const config = onEphemeralPorts(loadConfig(peer!.config));
      const fault: { mode: Fault } = { mode: null };
      const log: string[] = [];
      let d = await startDaemon(config, { logger: recordingLogger(log), wrapRaftLog: faultyRaftLog(fault) });
      let c = new HeddleClient({ url: d.url, token: d.token });
      const take = (holder: string, key: string) => c.raw("POST", "/v1/claims/take", { holder, resources: [{ key, mode: "exclusive" }], ttlMs: 3_600_000 });
      const held = new Map<string, string>();
      let ackedIndex = 0;
      try {
        for (let i = 0; i < 600 && !((await c.status()) as { control: { isWritable: boolean } }).control.isWritable; i++) await new Promise((r) => setTimeout(r, 50));
        for (let i = 0; i < 10; i++) {
          const r = await take(`h${i}`, `k/${i}`);
          expect(r.status).toBe(200);
          held.set(`k/${i}`, `h${i}`);
          ackedIndex = Math.max(ackedIndex, (r.body as { index: number }).index);
        }
        fault.mode = mode;
        const refused = await take("late", "after-fault");
        expect(refused.status).toBeGreaterThanOrEqual(503);
        const again = await take("later", "after-fault-2");
        expect(again.status).toBe(503);
        expect((again.body as { message: string }).message).toMatch(new RegExp(`the Raft log store failed .*${mode === "full" ? "ENOSPC" : "EROFS"}.*Restart it once the disk is writable`));
        expect((await c.raw("GET", "/v1/claims?key=k%2F0")).body).toMatchObject({ holders: ["h0"] });
        const st = (await c.status()) as { control: { log: { failed: string | null } } };
        expect(st.control.log.failed).toMatch(mode === "full" ? /ENOSPC/ : /EROFS/);
        expect(log.some((l) => /^error raft log write failed: the Raft member has stopped \(failed closed\)/.test(l))).toBe(true);
      } finally {
        c.close();
        await d.close();
      }
      fault.mode = null;
      d = await startDaemon(config, { logger: recordingLogger([]) });
      c = new HeddleClient({ url: d.url, token: d.token });
      try {
        const appliedIndex = async () => ((await c.status()) as { control: { appliedIndex: number } }).control.appliedIndex;
        for (let i = 0; i < 600 && (await appliedIndex()) < ackedIndex; i++) await new Promise((r) => setTimeout(r, 50));
        for (const [key, holder] of held) expect((await c.raw("GET", `/v1/claims?key=${encodeURIComponent(key)}`)).body).toMatchObject({ holders: [holder] });
        for (let i = 0; i < 600 && !((await c.status()) as { control: { isWritable: boolean } }).control.isWritable; i++) await new Promise((r) => setTimeout(r, 50));
        expect((await take("again", "after-restart")).status).toBe(200);
      } finally {
        c.close();
        await d.close();
      }
    }, 120_000);
  }
});

describe("storage faults in governed mode: the ledger store", () => {
  it("a ledger store that cannot commit fails the peer closed and says so in the log, as in static mode", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-store-fault-gov-ledger-"));
    dirs.push(dir);
    const [peer] = await initCluster({ dir: join(dir, "c"), peers: 1, mode: "governed" });
    const config = onEphemeralPorts(loadConfig(peer!.config));
    mkdirSync(config.storeDir, { recursive: true });
    const fault: { mode: Fault } = { mode: null };
    const log: string[] = [];
    const d = await startDaemon(config, { logger: recordingLogger(log), store: faultyStore(join(config.storeDir, "ledger.sqlite"), fault) });
    const c = new HeddleClient({ url: d.url, token: d.token });
    try {
      for (let i = 0; i < 600 && !((await c.status()) as { control: { isWritable: boolean } }).control.isWritable; i++) await new Promise((r) => setTimeout(r, 50));
      expect((await c.raw("POST", "/v1/control/mint", { amount: "100" })).status).toBe(200);
      expect((await status(c)).failed).toBe(false);
      expect(log.some((l) => l.startsWith("error store commit failed"))).toBe(false);
      fault.mode = "full";
      // applying this mint writes the ledger store, which now fails: the data-plane node fails closed
      await c.raw("POST", "/v1/control/mint", { amount: "50" });
      for (let i = 0; i < 200 && !(await status(c)).failed; i++) await new Promise((r) => setTimeout(r, 25));
      expect((await status(c)).failed).toBe(true);
      const line = log.find((l) => l.startsWith("error store commit failed: the node has failed closed; restart it "));
      expect(line).toMatch(/disk is full/);
      expect(line).toContain("(embedder's store)");
    } finally {
      c.close();
      await d.close();
    }
  }, 120_000);
});


const noMount = canMount();
if (noMount !== null) console.log(`storage fault on a real filesystem skipped: ${noMount}`);

describe.skipIf(noMount !== null)("storage faults (a real tmpfs that fills up, then turns read-only)", () => {
  it("disk full, then read-only: fails closed with SQLite's own error, loses nothing acknowledged, recovers once writable", async () => {
    const mnt = mkdtempSync(join(tmpdir(), "heddle-tmpfs-"));
    dirs.push(mnt);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt]);
    try {
      const storeDir = join(mnt, "store");
      const { config } = await cluster(storeDir);
      const log: string[] = [];
      let d = await startDaemon(config, { logger: recordingLogger(log) });
      let c = new HeddleClient({ url: d.url, token: d.token });
      const acked: Acked = { spent: 0n, open: new Map() };
      let minted: string;
      const filler = join(mnt, "filler");
      try {
        await fund(c, 200n);
        await work(c, acked, 5);
        minted = (await status(c)).mintedTotal;
        // Fill the disk to the last byte.
        fillDisk(filler);
        // Writes may still fit in pages SQLite already has; keep writing until the disk refuses one.
        let refused = false;
        for (let i = 0; i < 2_000 && !refused; i++) {
          const r = await c.raw("POST", "/v1/reservations", { leaf: "batch", maximumCost: 1 });
          if (r.status === 201) {
            const id = (r.body as { id: string }).id;
            const done = await c.raw("POST", "/v1/reservations/complete", { id, actualCost: 1 });
            if (done.status === 200) acked.spent += BigInt((done.body as { charged: string }).charged);
            else {
              expect(done.status).toBe(503);
              acked.open.set(id, 1n);
              refused = true;
            }
          } else {
            expect(r.status).toBe(503);
            refused = true;
          }
        }
        expect(refused).toBe(true);
        await expectFailedClosed(c, acked, log);
      } finally {
        c.close();
        await d.close();
      }
      // Free the space but turn the filesystem read-only: a restart cannot open the store for writing.
      unlinkSync(filler);
      execFileSync("mount", ["-o", "remount,ro", mnt]);
      await expect(startDaemon(config, { logger: recordingLogger([]) })).rejects.toMatchObject({ name: "DaemonStartError", reason: "store" });
      // Writable again: the peer recovers from its store.
      execFileSync("mount", ["-o", "remount,rw", mnt]);
      d = await startDaemon(config, { logger: recordingLogger([]) });
      try {
        await expectRecovered(d, acked, minted);
      } finally {
        await d.close();
      }
    } finally {
      execFileSync("umount", ["-l", mnt]);
    }
  }, 180_000);
});


/** Open file descriptors of this process on `path` (Linux: /proc/self/fd). */
function openHandles(path: string): number {
  let n = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(path)) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

describe.skipIf(!existsSync("/proc/self/fd"))("a daemon that cannot start on its store", () => {
  // Regression (found by the tmpfs fault test): startDaemon left the SQLite handle open when the node
  // refused the store, so a retry in the same process after the disk turned writable again still failed.
  it("closes the store it opened", async () => {
    const { config } = await cluster();
    const d = await startDaemon(config, { logger: recordingLogger([]) });
    await d.close();
    const path = join(config.storeDir, "ledger.sqlite");
    expect(openHandles(path)).toBe(0);
    // Another genesis on the same store: refused with StoreMismatchError inside the node's boot.
    const mode = config.mode as unknown as { supply: Map<string, bigint> };
    const other = { ...config, mode: { ...mode, supply: new Map([...mode.supply].map(([k, v]) => [k, v + 1n])) } } as unknown as DaemonConfig;
    await expect(startDaemon(other, { logger: recordingLogger([]) })).rejects.toMatchObject({ name: "DaemonStartError", reason: "store" });
    expect(openHandles(path)).toBe(0);
  }, 60_000);
});

describe.skipIf(noMount !== null)("storage faults in governed mode: the Raft log (raft-wal/) on a real tmpfs that fills up, then turns read-only", () => {
  // Claims write only the Raft log (the claims table is replicated state, no ledger row), so they exercise the
  // segmented log store alone. Segments of 64 KiB (instead of 16 MiB) make the full disk reach a segment roll.
  it("disk full: the Raft member fails closed (503, log, status); read-only: start refused; writable: every acknowledged claim is there", async () => {
    const mnt = mkdtempSync(join(tmpdir(), "heddle-tmpfs-raft-"));
    dirs.push(mnt);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt]);
    const opts = { raftSegmentBytes: 64 * 1024 };
    try {
      const dir = mkdtempSync(join(tmpdir(), "heddle-store-fault-raft-"));
      dirs.push(dir);
      const [peer] = await initCluster({ dir: join(dir, "c"), peers: 1, mode: "governed" });
      const config: DaemonConfig = { ...onEphemeralPorts(loadConfig(peer!.config)), storeDir: join(mnt, "store") };
      const log: string[] = [];
      let d = await startDaemon(config, { ...opts, logger: recordingLogger(log) });
      let c = new HeddleClient({ url: d.url, token: d.token });
      const held = new Map<string, string>();
      let ackedIndex = 0;
      const take = (holder: string, key: string) => c.raw("POST", "/v1/claims/take", { holder, resources: [{ key, mode: "exclusive" }], ttlMs: 3_600_000 });
      let minted: string;
      try {
        for (let i = 0; i < 600 && !((await c.status()) as { control: { isWritable: boolean } }).control.isWritable; i++) await new Promise((r) => setTimeout(r, 50));
        expect((await c.raw("POST", "/v1/control/mint", { holder: d.self, amount: "100" }, { headers: { "idempotency-key": "mint-1" } })).status).toBe(200);
        minted = (await status(c)).mintedTotal;
        for (let i = 0; i < 20; i++) {
          const r = await take(`h${i}`, `before/${i}`);
          expect(r.status).toBe(200);
          held.set(`before/${i}`, `h${i}`);
          ackedIndex = Math.max(ackedIndex, (r.body as { index: number }).index);
        }
        const filler = join(mnt, "filler");
        fillDisk(filler);
        // Takes still fit the segment's preallocated space (durable: acknowledged); the roll needs new space.
        let refused: { status: number; body: unknown } | null = null;
        for (let i = 0; i < 5_000 && refused === null; i++) {
          const r = await take(`f${i}`, `full/${i}`);
          if (r.status === 200) {
            held.set(`full/${i}`, `f${i}`);
            ackedIndex = Math.max(ackedIndex, (r.body as { index: number }).index);
          } else refused = r;
        }
        expect(refused).not.toBeNull();
        // fails closed: 503, and so does every later write; reads of the applied state keep working
        expect(refused!.status).toBeGreaterThanOrEqual(503);
        const later = await take("late", "after-full");
        expect(later.status).toBe(503);
        expect((later.body as { message: string }).message).toMatch(/no space left on device|ENOSPC/);
        const read = await c.raw("GET", `/v1/claims?key=${encodeURIComponent("before/0")}`);
        expect(read.status).toBe(200);
        expect(read.body).toMatchObject({ holders: ["h0"] });
        const st = (await c.status()) as { control: { log: { kind: string; failed: string | null } } };
        expect(st.control.log.kind).toBe("wal");
        expect(st.control.log.failed).toMatch(/ENOSPC/);
        expect(log.some((l) => /^error raft log write failed: the Raft member has stopped \(failed closed\); restart it .*ENOSPC/.test(l))).toBe(true);
        unlinkSync(filler);
      } finally {
        c.close();
        await d.close();
      }
      // Read-only: the restart is refused, saying why.
      execFileSync("mount", ["-o", "remount,ro", mnt]);
      await expect(startDaemon(config, { ...opts, logger: recordingLogger([]) })).rejects.toMatchObject({ name: "DaemonStartError", reason: "store" });
      // Writable again: every acknowledged claim and the mint are there, and the peer writes again.
      execFileSync("mount", ["-o", "remount,rw", mnt]);
      d = await startDaemon(config, { ...opts, logger: recordingLogger([]) });
      c = new HeddleClient({ url: d.url, token: d.token });
      try {
        const appliedIndex = async () => ((await c.status()) as { control: { appliedIndex: number } }).control.appliedIndex;
        for (let i = 0; i < 600 && (await appliedIndex()) < ackedIndex; i++) await new Promise((r) => setTimeout(r, 50));
        expect(await appliedIndex()).toBeGreaterThanOrEqual(ackedIndex);
        expect((await status(c)).mintedTotal).toBe(minted);
        for (const [key, holder] of held) {
          const r = await c.raw("GET", `/v1/claims?key=${encodeURIComponent(key)}`);
          expect(r.body).toMatchObject({ holders: [holder] });
        }
        for (let i = 0; i < 600 && !((await c.status()) as { control: { isWritable: boolean } }).control.isWritable; i++) await new Promise((r) => setTimeout(r, 50));
        expect((await take("again", "after-restart")).status).toBe(200);
        const st = (await c.status()) as { control: { log: { failed: string | null } } };
        expect(st.control.log.failed).toBeNull();
      } finally {
        c.close();
        await d.close();
      }
    } finally {
      execFileSync("umount", ["-l", mnt]);
    }
  }, 180_000);
});
