// packages/client/examples/readme.ts — against a running daemon with a leaf "batch" that has standing demand (the
// root README's cluster); from the repository root, after eval "$(heddle env --config …)" set HEDDLE_URL and HEDDLE_TOKEN:
//   npx -y pnpm@10 exec node packages/client/examples/readme.ts
import { ApiError, DaemonUnreachableError, HeddleClient } from "@heddle/client";

const api = new HeddleClient({ url: process.env.HEDDLE_URL!, token: process.env.HEDDLE_TOKEN! });
try {
  const r = await api.reserve("batch", 10, { idempotencyKey: "job-42" });   // a retry with the key is applied once
  // … run the work …
  console.log(await api.complete(r.id, 7));   // { id: '…', charged: '7', outcome: 'charged' }
} catch (e) {
  if (e instanceof ApiError && e.status === 409) console.log("refused:", e.body.refusal);   // e.g. { kind: 'insufficient', … }
  else if (e instanceof DaemonUnreachableError) console.log(e.message);                      // says what to do
  else throw e;
} finally {
  api.close();
}
