// Headless Chromium for browser tests: Debian's `chromium` package driven by playwright-core (no browser
// download works here; `.ci/run` installs the package when it is missing).
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** Where Debian's chromium package puts the browser. */
export const CHROMIUM = process.env["HEDDLE_CHROMIUM"] ?? "/usr/bin/chromium";

/** The flags every browser test runs with. */
export const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** Launches the system Chromium; fails with what to install when it is missing. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium), or point HEDDLE_CHROMIUM at a Chromium binary`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}
