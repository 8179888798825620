// Governed mode on an etcd cluster (issue 18): opening this peer's `etcdControlLog` at start from `mode.etcd`, with
// errors that name the config key to fix.
import { readFileSync } from "node:fs";
import { etcdControlLog, EtcdLogCorruptError, EtcdUnreachableError, type EtcdControlLog } from "@heddle/governed";
import type { EtcdLogSettings } from "./etcd-config.ts";

/** etcd could not be used at start; `field` is the config key to look at. */
export class EtcdStartError extends Error {
  readonly field: string;

  constructor(field: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "EtcdStartError";
    this.field = field;
  }
}

function readSecret(path: string, field: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new EtcdStartError(field, `${field}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
  }
}

/**
 * Opens this peer's etcd control log and waits until etcd answers; `EtcdStartError` names the key to fix. `warn`
 * gets the log's operator warnings (a head stamped far ahead of this peer's clock, a malformed head).
 */
export async function openEtcdLog(s: EtcdLogSettings, self: string, warn?: (message: string) => void): Promise<EtcdControlLog> {
  const tls = s.tls === undefined ? undefined : {
    ca: readSecret(s.tls.caFile, "mode.etcd.tls.caFile"),
    ...(s.tls.certFile !== undefined ? { cert: readSecret(s.tls.certFile, "mode.etcd.tls.certFile") } : {}),
    ...(s.tls.keyFile !== undefined ? { key: readSecret(s.tls.keyFile, "mode.etcd.tls.keyFile") } : {}),
  };
  const auth = s.auth === undefined ? undefined : { username: s.auth.username, password: readSecret(s.auth.passwordFile, "mode.etcd.auth.passwordFile").toString("utf8").trim() };
  const log = etcdControlLog({
    id: self,
    endpoints: s.endpoints,
    ...(s.prefix !== undefined ? { prefix: s.prefix } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(auth !== undefined ? { auth } : {}),
    ...(s.callTimeoutMs !== undefined ? { callTimeoutMs: s.callTimeoutMs } : {}),
    ...(s.attemptTimeoutMs !== undefined ? { attemptTimeoutMs: s.attemptTimeoutMs } : {}),
    ...(s.unavailableAfterMs !== undefined ? { unavailableAfterMs: s.unavailableAfterMs } : {}),
    ...(warn !== undefined ? { onWarning: warn } : {}),
  });
  try {
    await log.started;
  } catch (e) {
    await log.close().catch(() => {});
    // etcd answered with a malformed head under the prefix: the prefix's contents are at fault, not the endpoints
    if (e instanceof EtcdLogCorruptError) throw new EtcdStartError("mode.etcd.prefix", `mode.etcd.prefix: etcd answered, but ${e.message}`, { cause: e });
    const why = e instanceof EtcdUnreachableError ? e.message : String(e);
    throw new EtcdStartError("mode.etcd.endpoints", `mode.etcd.endpoints: ${why}`, { cause: e });
  }
  return log;
}
