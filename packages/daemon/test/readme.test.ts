// The package README opens with a runnable example: run it.
import { execFile } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

it("the README's example runs, completes a reservation, prints the dashboard's address and scrapes /metrics", async () => {
  const readme = readFileSync(fileURLToPath(new URL("../README.md", import.meta.url)), "utf8");
  const code = /```ts\n([\s\S]*?)```/.exec(readme)![1]!;
  const file = fileURLToPath(new URL("./readme-example.tmp.ts", import.meta.url));
  writeFileSync(file, code);
  try {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [file], { timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))),
    );
    expect(out).toMatch(/charged: '7',\s+outcome: 'charged'/);
    // the dashboard's address, and the spend in /metrics
    expect(out).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dashboard#token=\S{16,}$/m);
    expect(out).toMatch(/^heddle_group_spent\{edge="[^"]+",parent="root",child="batch"\} 7$/m);
  } finally {
    rmSync(file, { force: true });
  }
});
