// One daemon for the dashboard bench, in its own process: `node daemon-child.ts CONFIG sqlite|memory`.
// Prints the API URL on stdout once it listens; stops on SIGTERM.
import { memoryStore } from "@heddle/node";
import { silentLogger, startDaemon } from "../src/index.ts";

const [config, store] = process.argv.slice(2);
const d = await startDaemon(config!, { logger: silentLogger, ...(store === "memory" ? { store: memoryStore({}) } : {}) });
process.stdout.write(`${d.url}\n`);
process.once("SIGTERM", () => void d.close().then(() => process.exit(0)));
