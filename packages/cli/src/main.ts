#!/usr/bin/env node
// The `heddle` command.
import { DEMO_HELP, DemoUsageError, parseDemoArgs } from "./demo/options.ts";
import { runDemo } from "./demo/run.ts";

const USAGE = `heddle — fair sharing of capacity across a tree of groups, on many peers

Usage: heddle <command> [options]

Commands:
  demo      run a live demo: peers as separate processes over libp2p (see heddle demo --help)
  help      this text
`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case undefined:
    case "help":
    case "-h":
    case "--help":
      process.stdout.write(USAGE);
      return 0;
    case "demo": {
      let o;
      try {
        o = parseDemoArgs(rest, process.stdout.isTTY === true);
      } catch (e) {
        if (e instanceof DemoUsageError) {
          process.stderr.write(`heddle demo: ${e.message}\n`);
          return 2;
        }
        throw e;
      }
      if (o === "help") {
        process.stdout.write(DEMO_HELP);
        return 0;
      }
      return runDemo(o);
    }
    default:
      process.stderr.write(`heddle: unknown command ${cmd}\n\n${USAGE}`);
      return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
