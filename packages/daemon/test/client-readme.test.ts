// The client README opens with packages/client/examples/readme.ts (examples/readmes.test.ts keeps the two equal):
// run it against real daemons, as the README says, and check it prints what its comments say.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { soloDaemon, type SoloDaemon } from "./support/embedded.ts";

const EXAMPLE = fileURLToPath(new URL("../../client/examples/readme.ts", import.meta.url));

/** Runs the example as a user would (its own process), with `env` in place of the user's HEDDLE_URL / HEDDLE_TOKEN. */
function runExample(env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  const base = { ...process.env };
  delete base["HEDDLE_URL"];
  delete base["HEDDLE_TOKEN"];
  return new Promise((resolve) =>
    execFile(process.execPath, [EXAMPLE], { env: { ...base, ...env }, timeout: 60_000 }, (err, out, errOut) =>
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : 1, out, err: errOut }),
    ),
  );
}

let served: SoloDaemon;
let idle: SoloDaemon;

beforeAll(async () => {
  [served, idle] = await Promise.all([soloDaemon({ tree: "batch=1" }), soloDaemon({ tree: "batch=1" })]);
  // The README's precondition on `served`: demand stands at batch, and a scheduler round has delegated to it.
  await served.client.demand({ leaf: "batch", targetOutstanding: 100, maximumUsefulGrant: 20 });
  for (;;) {
    const h = (await served.client.holdings("batch")) as { groups: { available: string | null }[] };
    if (BigInt(h.groups[0]?.available ?? "0") >= 10n) break;
    await new Promise((ok) => setTimeout(ok, 50));
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([served?.close(), idle?.close()]);
});

describe("the client README's example", () => {
  it("reserves and completes at its real cost, and a rerun under the same Idempotency-Key charges nothing twice", async () => {
    const first = await runExample({ HEDDLE_URL: served.daemon.url, HEDDLE_TOKEN: served.daemon.token });
    expect(first, first.err).toMatchObject({ code: 0 });
    const id = /^\{\s+id: '([^']+)',\s+charged: '7',\s+outcome: 'charged'\s+\}\n$/.exec(first.out)?.[1];
    expect(id, first.out).toBeDefined();
    // the README: "a retry with the key is applied once" — the same reservation comes back, already charged
    const again = await runExample({ HEDDLE_URL: served.daemon.url, HEDDLE_TOKEN: served.daemon.token });
    expect(again, again.err).toMatchObject({ code: 0 });
    expect(again.out.replace(/\s+/g, " ")).toBe(`{ id: '${id}', charged: '0', outcome: 'no-such-reservation' } `);
  });

  it("prints the refusal when the leaf has nothing to reserve", async () => {
    const r = await runExample({ HEDDLE_URL: idle.daemon.url, HEDDLE_TOKEN: idle.daemon.token });
    expect(r, r.err).toMatchObject({ code: 0 });
    expect(r.out).toMatch(/^refused: \{\s+kind: 'insufficient',/);
  });

  it("says what to do when no daemon answers", async () => {
    const gone = idle.daemon.url.replace(/:\d+$/, ":9");
    const r = await runExample({ HEDDLE_URL: gone, HEDDLE_TOKEN: "any-token-at-all" });
    expect(r, r.err).toMatchObject({ code: 0 });
    expect(r.out).toBe(`nothing is listening at ${gone}: is the daemon running? (start it with: heddle start --config <file>)\n`);
  });

  it("run without HEDDLE_URL or HEDDLE_TOKEN, fails saying which is missing and where to get it", async () => {
    const noUrl = await runExample({ HEDDLE_TOKEN: "any-token-at-all" });
    expect(noUrl.code).not.toBe(0);
    expect(noUrl.err).toContain("url: give the daemon's http(s) base URL such as http://127.0.0.1:7201 (`heddle env --config FILE` prints it as HEDDLE_URL), got nothing");
    const noToken = await runExample({ HEDDLE_URL: served.daemon.url });
    expect(noToken.code).not.toBe(0);
    expect(noToken.err).toContain("token: give the daemon's bearer token (the peer's api.tokenFile; `heddle env --config FILE` prints it as HEDDLE_TOKEN), got nothing");
  });
});
