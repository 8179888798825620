// packages/client/examples/wire.ts (shown in the client README's call-wire section) run as a user would, against a
// governed peer: one of eight racing takes wins, seven are refused naming the winner, and the key is free after.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { governedSoloDaemon, type SoloDaemon } from "./support/embedded.ts";

const EXAMPLE = fileURLToPath(new URL("../../client/examples/wire.ts", import.meta.url));
let s: SoloDaemon;
beforeAll(async () => {
  s = await governedSoloDaemon();
});
afterAll(() => s?.close());

it("the call-wire example: one winner, seven refusals naming it, the key released", async () => {
  const r = await new Promise<{ code: number; out: string; err: string }>((resolve) =>
    execFile(process.execPath, [EXAMPLE], { env: { ...process.env, HEDDLE_URL: s.daemon.url, HEDDLE_TOKEN: s.daemon.token }, timeout: 60_000 }, (err, out, errOut) =>
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : 1, out, err: errOut }),
    ),
  );
  expect(r, r.err).toMatchObject({ code: 0 });
  const m = /^worker-(\d) holds report\/2026-12 \(fencing token \d+\); 7 refused, each naming the holder: \[ 'worker-(\d)' \]\n$/.exec(r.out);
  expect(m, r.out).not.toBeNull();
  expect(m![2]).toBe(m![1]);
  const after = (await s.client.raw("GET", "/v1/claims?key=report/2026-12")).body as { holders: string[] };
  expect(after.holders).toEqual([]);
});
