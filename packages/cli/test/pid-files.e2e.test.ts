// `heddle up --detach` and `heddle down` trust a pid file only while it names a `heddle start` of that
// peer's config: a stale file whose pid now belongs to another process is removed, that process is left
// alone, and a failed `up --detach` leaves no pid files behind.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.ts";
import { heddle, heddleJson, MAIN } from "./support/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "heddle-pid-files-"));
afterAll(async () => {
  await heddle(["down", join(dir, "c")]);
  rmSync(dir, { recursive: true, force: true });
});

describe("pid files of detached peers", () => {
  it("down neither signals a process that reused a stale pid nor keeps the file; a failed up --detach leaves none", async () => {
    const cluster = join(dir, "c");
    expect((await heddle(["init", "--peers", "2", cluster])).code).toBe(0);
    // A stale pid file naming a live process that is not a heddle peer.
    const bystander = spawn(process.execPath, ["-e", "setTimeout(() => {}, 120000)"], { stdio: "ignore" });
    try {
      const pidFile = join(cluster, "peer-1", "daemon.pid");
      writeFileSync(pidFile, `${bystander.pid}\n`);
      const down = await heddle(["down", cluster]);
      expect(down.code, down.err).toBe(EXIT.ok);
      expect(down.out).toContain("no peer was running");
      expect(existsSync(pidFile)).toBe(false);
      expect(bystander.exitCode).toBeNull();
      expect(bystander.signalCode).toBeNull();
      // The same stale file does not stop `up --detach` as "already running"; make peer-2 fail to start
      // (its API port taken) so up stops peer-1 again and must leave no pid file behind.
      writeFileSync(pidFile, `${bystander.pid}\n`);
      const conf = JSON.parse(readFileSync(join(cluster, "peer-2", "heddle.json"), "utf8")) as { api: { listen: string } };
      const [host, port] = [conf.api.listen.slice(0, conf.api.listen.lastIndexOf(":")), Number(conf.api.listen.slice(conf.api.listen.lastIndexOf(":") + 1))];
      const squatter: Server = createServer((socket) => socket.destroy());
      await new Promise<void>((r) => squatter.listen(port, host, r));
      try {
        const up = await heddle(["up", "--detach", cluster]);
        expect(up.code, up.err).toBe(EXIT.startFailed);
        expect(up.err).not.toContain("already running");
        expect(up.err).toMatch(/peer-2 could not start/);
        // a detached peer's reason is in its log: up quotes the end of it, and does not also say "the others keep running"
        expect(up.err).toMatch(/the end of .*peer-2.daemon\.log:\n {2}\| /);
        expect(up.err).toMatch(/address is in use/);
        expect(up.err).not.toContain("the others keep running");
      } finally {
        await new Promise<void>((r) => squatter.close(() => r()));
      }
      expect(existsSync(join(cluster, "peer-1", "daemon.pid"))).toBe(false);
      expect(existsSync(join(cluster, "peer-2", "daemon.pid"))).toBe(false);
      expect(bystander.exitCode).toBeNull();
    } finally {
      bystander.kill("SIGKILL");
    }
  });

  it("up refuses a cluster one of whose peers already runs (its API answers), starting nothing; start of that peer says it runs", async () => {
    const cluster = join(dir, "c");
    const cfg = join(cluster, "peer-1", "heddle.json");
    // peer-1 started on its own, as `heddle start` does (no pid file)
    const first = spawn(process.execPath, [MAIN, "start", "--config", cfg], { stdio: "ignore" });
    try {
      let ready = false;
      for (let i = 0; i < 200 && !ready; i++) {
        ready = (await heddle(["status", "--config", cfg, "--timeout", "2"])).code === EXIT.ok;
        if (!ready) await new Promise((r) => setTimeout(r, 100));
      }
      expect(ready).toBe(true);
      for (const argv of [["up", cluster], ["up", "--detach", cluster]]) {
        const up = await heddle(argv);
        expect(up.code, up.err).toBe(EXIT.startFailed);
        expect(up.err).toMatch(/peer-1 is already running: its API at http:\/\/[^ ]+ answers/);
        expect(up.out).not.toContain("running");
      }
      expect(existsSync(join(cluster, "peer-2", "daemon.pid"))).toBe(false);
      // `heddle start` of the same peer finds its ports taken by that very peer: it says so (pid, API, how to stop
      // it), not "in use by another process"
      const self = (await heddleJson(["status", "--config", cfg])) as { self: string; pid: number };
      const again = await heddle(["start", "--config", cfg]);
      expect(again.code, again.err).toBe(EXIT.startFailed);
      expect(again.err).not.toContain("another process");
      expect(again.err).toContain(`this peer (${self.self}) is already running: pid ${self.pid}, API http://`);
      expect(again.err).toContain(`kill ${self.pid}`);
      // … and, when its pid file names it (a detached up), that heddle down stops it
      writeFileSync(join(cluster, "peer-1", "daemon.pid"), `${first.pid}\n`);
      const detached = await heddle(["start", "--config", cfg]);
      expect(detached.code, detached.err).toBe(EXIT.startFailed);
      expect(detached.err).toContain(`this peer (${self.self}) is already running: pid ${first.pid}, API http://`);
      expect(detached.err).toContain(`heddle down ${cluster}`);
      rmSync(join(cluster, "peer-1", "daemon.pid"));
      // the peer that was running is untouched
      expect(first.exitCode).toBeNull();
      expect((await heddle(["status", "--config", cfg])).code).toBe(EXIT.ok);
    } finally {
      first.kill("SIGTERM");
      await new Promise((r) => first.once("exit", r));
    }
  });
});
