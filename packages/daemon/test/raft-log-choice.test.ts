// Which Raft log store a governed daemon runs on (store.raftLog): new stores use the segmented log (raft-wal/), a
// store that already holds raft.sqlite keeps it (auto), and a forced kind beside the other's files is refused —
// an empty log under the same member id would lose its term, vote and entries (R-P5).
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chooseRaftLog, RaftLogChoiceError } from "../src/governed-peer.ts";
import { initCluster, loadConfig, startDaemon, type DaemonConfig, type Logger } from "../src/index.ts";
import { HeddleClient } from "@heddle/client";
import { onEphemeralPorts } from "./support/embedded.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const fresh = (): string => {
  const d = mkdtempSync(join(tmpdir(), "heddle-raft-log-"));
  dirs.push(d);
  return d;
};

describe("chooseRaftLog", () => {
  it("auto: the segmented log on a new store, an existing raft.sqlite kept", () => {
    const d = fresh();
    expect(chooseRaftLog(d, "auto")).toMatchObject({ kind: "wal", path: join(d, "raft-wal") });
    // an empty raft-wal/ (a first start that stopped before its first segment) is no log yet
    mkdirSync(join(d, "raft-wal"));
    expect(chooseRaftLog(d, "auto").kind).toBe("wal");
    const old = fresh();
    writeFileSync(join(old, "raft.sqlite"), "");
    expect(chooseRaftLog(old, "auto")).toMatchObject({ kind: "sqlite", path: join(old, "raft.sqlite"), why: expect.stringMatching(/existing raft\.sqlite/) });
  });

  it("refuses a forced kind beside the other's log, and two logs, naming store.raftLog", () => {
    const old = fresh();
    writeFileSync(join(old, "raft.sqlite"), "");
    expect(() => chooseRaftLog(old, "wal")).toThrow(RaftLogChoiceError);
    expect(() => chooseRaftLog(old, "wal")).toThrow(/store\.raftLog is "wal".*raft\.sqlite/);
    expect(chooseRaftLog(old, "sqlite").kind).toBe("sqlite");
    const wal = fresh();
    mkdirSync(join(wal, "raft-wal"));
    writeFileSync(join(wal, "raft-wal", "wal-0000000000000001.seg"), "");
    expect(() => chooseRaftLog(wal, "sqlite")).toThrow(/store\.raftLog is "sqlite".*raft-wal/);
    expect(chooseRaftLog(wal, "wal").kind).toBe("wal");
    writeFileSync(join(wal, "raft.sqlite"), "");
    expect(() => chooseRaftLog(wal, "auto")).toThrow(/two Raft logs/);
  });
});

function recordingLogger(lines: string[]): Logger {
  const rec = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const l: Logger = { debug: rec("debug"), info: rec("info"), warn: rec("warn"), error: rec("error"), child: () => l } as unknown as Logger;
  return l;
}

async function governedPeer(): Promise<DaemonConfig> {
  const dir = fresh();
  const [peer] = await initCluster({ dir: join(dir, "c"), peers: 1, mode: "governed" });
  return onEphemeralPorts(loadConfig(peer!.config));
}

type Status = { control: { log: unknown; mintedTotal: string } };

/** The status once the restarted member applied its log again (it replays once it leads; up to 30 s). */
async function applied(c: HeddleClient): Promise<Status> {
  for (let i = 0; i < 600; i++) {
    const st = (await c.status()) as Status;
    if (st.control.mintedTotal !== "0") return st;
    await new Promise((r) => setTimeout(r, 50));
  }
  return (await c.status()) as Status;
}

async function mintAndRestart(config: DaemonConfig, lines: string[]): Promise<{ status: Status }> {
  let d = await startDaemon(config, { logger: recordingLogger(lines) });
  let c = new HeddleClient({ url: d.url, token: d.token });
  try {
    for (let i = 0; i < 300 && !((await c.status()) as { control: { isWritable: boolean } }).control.isWritable; i++) await new Promise((r) => setTimeout(r, 50));
    const r = await c.raw("POST", "/v1/control/mint", { holder: d.self, amount: "5" }, { headers: { "idempotency-key": "m-1" } });
    expect(r.status).toBe(200);
  } finally {
    c.close();
    await d.close();
  }
  d = await startDaemon(config, { logger: recordingLogger(lines) });
  c = new HeddleClient({ url: d.url, token: d.token });
  try {
    return { status: await applied(c) };
  } finally {
    c.close();
    await d.close();
  }
}

describe("a governed daemon's Raft log store", () => {
  it("a new store runs on raft-wal/, says so in its log and status, and keeps its log across a restart", async () => {
    const config = await governedPeer();
    const lines: string[] = [];
    const { status } = await mintAndRestart(config, lines);
    expect(status.control.mintedTotal).toBe("5");
    expect(status.control.log).toEqual({ kind: "wal", path: join(config.storeDir, "raft-wal"), failed: null });
    expect(existsSync(join(config.storeDir, "raft.sqlite"))).toBe(false);
    expect(lines.some((l) => /^info raft log: segmented log store at .*raft-wal/.test(l))).toBe(true);
  }, 60_000);

  it("a store made on SQLite keeps running on it under auto, saying why", async () => {
    const config = await governedPeer();
    const lines: string[] = [];
    const { status } = await mintAndRestart({ ...config, raftLog: "sqlite" }, lines);
    expect(status.control.mintedTotal).toBe("5");
    const auto = await startDaemon(config, { logger: recordingLogger(lines) });
    const c = new HeddleClient({ url: auto.url, token: auto.token });
    try {
      const st = await applied(c);
      expect(st.control.log).toEqual({ kind: "sqlite", path: join(config.storeDir, "raft.sqlite"), failed: null });
      expect(st.control.mintedTotal).toBe("5");
      expect(lines.some((l) => /^info raft log: SQLite at .*raft\.sqlite .*existing raft\.sqlite/.test(l))).toBe(true);
    } finally {
      c.close();
      await auto.close();
    }
    // forcing the segmented log on it is refused at start, naming the key
    await expect(startDaemon({ ...config, raftLog: "wal" }, { logger: recordingLogger([]) })).rejects.toMatchObject({ name: "DaemonStartError", reason: "store", message: expect.stringMatching(/store\.raftLog is "wal"/) });
  }, 60_000);
});
