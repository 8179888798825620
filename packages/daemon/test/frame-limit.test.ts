// node.maxFrameBytes above the libp2p seam's default (1 MiB) is the limit in force: the daemon's seam is opened
// large enough for it, so a roster peer's 2 MiB ledger frame reaches the node (which judges it) instead of being cut
// off by the seam at 1 MiB whatever the config said.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { privateKeyFromProtobuf } from "@libp2p/crypto/keys";
import { ChannelTag, libp2pSeam, realTimers, type Libp2pSeam } from "@heddle/node";
import { LIBP2P_SEAM_DEFAULTS } from "../../seam/src/index.ts";
import { initCluster, loadConfig, silentLogger, startDaemon, type InitPeer, type RunningDaemon } from "../src/index.ts";
import { SEAM_DEFAULT_FRAME_BYTES, seamFrameLimitOf } from "../src/daemon.ts";
import { parsePrometheus } from "./support/prometheus.ts";
import { onEphemeralPorts } from "./support/embedded.ts";

const MiB = 1_048_576;
let dir: string;
let peers: InitPeer[];
let daemon: RunningDaemon;
let other: Libp2pSeam;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "heddle-frame-limit-"));
  peers = await initCluster({ dir: join(dir, "c"), peers: 2, mode: "static" });
  const c = onEphemeralPorts(loadConfig(peers[0]!.config));
  daemon = await startDaemon({ ...c, node: { ...c.node, maxFrameBytes: 2 * MiB } }, { logger: silentLogger });
  // the second roster peer, as a bare seam that can send larger frames than anyone should accept
  other = await libp2pSeam({
    privateKey: privateKeyFromProtobuf(readFileSync(join(peers[1]!.dir, "peer.key"))),
    listen: ["/ip4/127.0.0.1/tcp/0"],
    roster: [{ id: daemon.self, addrs: [...daemon.p2pAddrs] }],
    allowOnlyRoster: true,
    timers: realTimers,
    random: Math.random,
    maxFrameBytes: 8 * MiB,
    redialMinMs: 50,
    redialMaxMs: 200,
  });
}, 30_000);
afterAll(async () => {
  await other?.close();
  await daemon?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function rejected(): Promise<Record<string, number>> {
  const r = await fetch(`${daemon.url}/metrics`, { headers: { authorization: `Bearer ${daemon.token}` } });
  return Object.fromEntries(parsePrometheus(await r.text()).all("heddle_frames_rejected_total").map((x) => [x.labels["reason"]!, x.value]));
}
const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

/** Sends a ledger frame of `bytes` (not a valid message) to the daemon; resolves with its rejection counts once it has judged it. */
async function sendLedgerFrame(bytes: number): Promise<Record<string, number>> {
  for (let i = 0; i < 200 && !other.peers.get().has(daemon.self); i++) await new Promise((r) => setTimeout(r, 25));
  expect(other.peers.get().has(daemon.self)).toBe(true);
  const before = total(await rejected());
  const frame = new Uint8Array(1 + bytes);
  frame[0] = ChannelTag.ledger;
  frame.fill(0xff, 1);
  expect(["ok", "queued"]).toContain(other.send(daemon.self, frame));
  for (let i = 0; i < 100; i++) {
    const now = await rejected();
    if (total(now) > before) return now;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the daemon never judged a ${bytes}-byte ledger frame: its seam cut it off`);
}

describe("node.maxFrameBytes above 1 MiB", () => {
  it("opens the seam one byte above it (the mux's channel tag), and leaves smaller limits to the seam's default", () => {
    expect(SEAM_DEFAULT_FRAME_BYTES).toBe(LIBP2P_SEAM_DEFAULTS.maxFrameBytes);
    expect(seamFrameLimitOf(daemon.config)).toEqual({ maxFrameBytes: 2 * MiB + 1 });
    const at = (maxFrameBytes?: number) => seamFrameLimitOf({ ...daemon.config, node: { ...daemon.config.node, ...(maxFrameBytes === undefined ? {} : { maxFrameBytes }) } });
    expect(at(4096)).toEqual({});
    expect(at(MiB - 1)).toEqual({});
    expect(at(MiB)).toEqual({ maxFrameBytes: MiB + 1 });
  });

  it("is the limit in force: a 1.5 MiB and a 2 MiB ledger frame reach the node and are judged, not as oversize", async () => {
    // Before: the seam kept its 1 MiB default, cut both frames off, and the node never saw them.
    const mid = await sendLedgerFrame(1.5 * MiB);
    expect(mid["oversize"]).toBe(0);
    const full = await sendLedgerFrame(2 * MiB);
    expect(full["oversize"]).toBe(0);
  }, 30_000);
});
