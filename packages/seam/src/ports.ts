// Ports for listen addresses that are bound later (a config written now, a process started next).
import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** Binds `port` on loopback (0: any) and lets it go; resolves the port bound, or null when it was taken. */
function probePort(port: number): Promise<number | null> {
  return new Promise((res) => {
    const s = createServer();
    s.once("error", () => res(null));
    s.listen(port, "127.0.0.1", () => {
      const a = s.address();
      const p = typeof a === "object" && a !== null ? a.port : null;
      s.close(() => res(p));
    });
  });
}

/** The range the kernel hands out to outgoing connections: Linux's setting, else the IANA range other systems use. */
export function ephemeralPortRange(read: () => string = () => readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")): readonly [number, number] {
  try {
    const [lo, hi] = read().trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi) && lo! >= 1 && lo! <= hi! && hi! <= 65_535) return [lo!, hi!];
  } catch {
    // not Linux, or no /proc: fall through
  }
  return [49_152, 65_535];
}

/** Where `freePort` picks from: below the ephemeral range (down to 10000), else above it; null when neither has room. */
export function listenPortRange(ephemeral: readonly [number, number]): readonly [number, number] | null {
  const [lo, hi] = ephemeral;
  if (lo - 1 >= 10_000 + 1_000) return [10_000, lo - 1];
  if (hi + 1 <= 65_535 - 1_000) return [hi + 1, 65_535];
  return null;
}

/**
 * A free loopback port for a config's listen address, not one already picked in `taken`. Picked outside the kernel's
 * ephemeral range: a port from that range, written into a config and bound only when the peer starts — maybe days
 * later —, can be handed meanwhile to any outgoing connection on the machine, and the peer then fails to start with
 * its port in use. Falls back to a port the kernel picks when no free one turns up outside the range.
 */
export async function freeListenPort(taken: Set<number> = new Set()): Promise<number> {
  const range = listenPortRange(ephemeralPortRange());
  for (let attempt = 0; range !== null && attempt < 200; attempt++) {
    const p = range[0] + randomInt(range[1] - range[0] + 1);
    if (taken.has(p)) continue;
    if ((await probePort(p)) !== null) return (taken.add(p), p);
  }
  for (let attempt = 0; attempt < 100; attempt++) {
    const p = await probePort(0);
    if (p !== null && !taken.has(p)) return (taken.add(p), p);
  }
  throw new Error("no free loopback port (is 127.0.0.1 up?)");
}
