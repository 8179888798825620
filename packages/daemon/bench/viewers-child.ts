// N dashboard viewers in their own process (so their CPU is not the daemon's): `node viewers-child.ts URL TOKEN N`.
// Prints "ready" once every viewer has synced; on "report" prints {bytes, frames} summed over viewers; exits on "exit".
import { createInterface } from "node:readline";
import { BenchViewer } from "./viewers.ts";

const [url, token, n] = process.argv.slice(2);
const viewers = Array.from({ length: Number(n) }, () => new BenchViewer(url!, token!));
await Promise.all(viewers.map((v) => v.synced));
process.stdout.write("ready\n");
createInterface({ input: process.stdin }).on("line", (l) => {
  if (l === "report") process.stdout.write(`${JSON.stringify({ bytes: viewers.reduce((a, v) => a + v.bytes, 0), frames: viewers.reduce((a, v) => a + v.frames, 0), open: viewers.filter((v) => v.ws.readyState === v.ws.OPEN).length })}\n`);
  if (l === "exit") {
    for (const v of viewers) v.close();
    setTimeout(() => process.exit(0), 100);
  }
});
