// packages/daemon/examples/readme.ts — run from the repository root:
//   npx -y pnpm@10 exec node packages/daemon/examples/readme.ts
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initCluster, startDaemon } from "@heddle/daemon";
import { HeddleClient } from "@heddle/client";

const dir = join(mkdtempSync(join(tmpdir(), "heddle-")), "solo");
const [peer] = await initCluster({ dir, peers: 1, mode: "static", tree: "batch=1" });   // mode "governed": mint and reshape at run time
const daemon = await startDaemon(peer!.config);          // { url, token, self, close() }
const api = new HeddleClient({ url: daemon.url, token: daemon.token });
await api.demand({ leaf: "batch", targetOutstanding: 100, maximumUsefulGrant: 20 });
let r;
for (;;) {                                               // 409 insufficient until a scheduler round delegates to batch
  try { r = await api.reserve("batch", 10); break; } catch { await new Promise((ok) => setTimeout(ok, 100)); }
}
console.log(await api.complete(r.id, 7));                // { id, charged: "7", outcome: "charged" }
console.log(`${daemon.url}/dashboard#token=${daemon.token}`);   // the live dashboard: open it in a browser
const metrics = await (await fetch(`${daemon.url}/metrics`, { headers: { authorization: `Bearer ${daemon.token}` } })).text();
console.log(metrics.match(/^heddle_group_spent\{.*$/m)?.[0]);   // heddle_group_spent{edge="…",parent="root",child="batch"} 7
api.close();
await daemon.close();
