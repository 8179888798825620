// How long an `Idempotency-Key` is remembered, over HTTP, on a one-voter governed peer whose window is 3
// control-log entries (the default is 10 000): a retry inside the window replays, the outcome lookup of a
// forgotten key says it may have been forgotten, a late retry of a mint mints nothing twice, and
// `heddle_idempotency_sessions` counts what is held.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePrometheus } from "./support/prometheus.ts";
import { governedSoloDaemon, type SoloDaemon } from "./support/embedded.ts";

const WINDOW = 3;
let s: SoloDaemon;

async function sessionsGauge(): Promise<number> {
  const r = await fetch(`${s.daemon.url}/metrics`, { headers: { authorization: `Bearer ${s.daemon.token}` } });
  return parsePrometheus(await r.text()).one("heddle_idempotency_sessions", {})!;
}

/** `n` control-log entries that carry no Idempotency-Key (enrolling the enrolled: a noop under an auto key). */
async function entries(n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await s.client.raw("POST", "/v1/control/enroll", {})).status).toBe(200);
}

beforeAll(async () => {
  s = await governedSoloDaemon({ start: { idempotencyWindow: WINDOW } });
});
afterAll(() => s.close());

describe("HTTP API: Idempotency-Key retention", () => {
  it("replays inside the window; past it the lookup says the key may be forgotten and a retried mint is a noop that mints nothing twice", async () => {
    const minted = async (): Promise<string> => ((await s.client.sync()) as { mintedTotal: string }).mintedTotal;
    const a = (await s.client.mint(40, { holder: s.daemon.self, idempotencyKey: "late-mint" })) as { kind: string; index: number; noop: boolean; mintId: string };
    expect(a).toMatchObject({ kind: "applied", noop: false });
    expect(await sessionsGauge()).toBe(1);
    const again = (await s.client.mint(40, { holder: s.daemon.self, idempotencyKey: "late-mint" })) as { index: number };
    expect(again.index).toBe(a.index);
    await entries(WINDOW + 1);
    // forgotten: the lookup cannot tell "never used" from "forgotten" any more, and says so
    const gone = await s.client.raw("GET", "/v1/control/outcome?idempotencyKey=late-mint");
    expect(gone.status).toBe(404);
    const body = gone.body as { message: string; retention: { entries: number; forgottenThrough: number; appliedIndex: number } };
    expect(body.retention.entries).toBe(WINDOW);
    expect(body.retention.forgottenThrough).toBeGreaterThanOrEqual(a.index);
    expect(body.message).toMatch(/never used, or used at an index ≤ \d+ and forgotten/);
    expect(await sessionsGauge()).toBe(0);
    // a late retry is a new act: the mint id is already minted, so it is a noop carrying it
    const late = (await s.client.mint(40, { holder: s.daemon.self, idempotencyKey: "late-mint" })) as { kind: string; index: number; noop: boolean; mintId: string };
    expect(late).toMatchObject({ kind: "applied", noop: true, mintId: a.mintId });
    expect(late.index).toBeGreaterThan(a.index);
    expect(await minted()).toBe("40");
    const o = (await s.client.outcome({ idempotencyKey: "late-mint" })) as { outcome: { index: number } };
    expect(o.outcome.index).toBe(late.index);
    expect(await sessionsGauge()).toBe(1);
  });
});
