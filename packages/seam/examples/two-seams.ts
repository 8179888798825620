// Two peers on the in-memory fabric, sharing one seam among two protocols through the channel mux.
// Run from the repository root:  npx -y pnpm@10 exec node packages/seam/examples/two-seams.ts
import { ChannelTag, MemoryNetwork, muxSeam, seededRandom } from "@heddle/seam";
import { VirtualTimers } from "@heddle/seam/testing";

const timers = new VirtualTimers();
const net = new MemoryNetwork({ timers, random: seededRandom(1), faults: { dropRate: 0, duplicateRate: 0, delayMs: [1, 5] } });
const alice = muxSeam(net.join("alice"));
const bob = muxSeam(net.join("bob"));
const aliceLedger = alice.channel(ChannelTag.ledger);
const bobLedger = bob.channel(ChannelTag.ledger);
bob.channel(ChannelTag.demand).onFrame((from, f) => console.log(`demand from ${from}: ${new TextDecoder().decode(f)}`));
bobLedger.onFrame((from, f) => console.log(`ledger from ${from}: ${new TextDecoder().decode(f)}`));
timers.advanceBy(1); // membership is announced through a 0 ms timer
console.log("alice sees:", [...aliceLedger.peers.get()]); // alice sees: [ 'bob' ]
aliceLedger.send("bob", new TextEncoder().encode("hello"));   // ledger from alice: hello
timers.advanceBy(10);
console.log(net.stats().delivered); // 1
