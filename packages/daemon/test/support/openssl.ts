// Whether the openssl command is on PATH (the TLS tests make their key and certificate with it; skipped without).
import { execFileSync } from "node:child_process";

export const hasOpenssl = ((): boolean => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
