// Command-line parsing shared by the commands: node:util's parseArgs, refusing what it would silently drop.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "./exit-codes.ts";

/**
 * Refuses a single-value option given twice (`--holder h1 --holder h2`): parseArgs keeps the last one silently, and a
 * command that acts on the wrong holder, key or daemon is worse than one that asks.
 */
export function rejectRepeatedOptions(tokens: readonly { kind: string; name?: string; value?: string | undefined }[], options: NonNullable<ParseArgsConfig["options"]>): void {
  const seen = new Map<string, string[]>();
  for (const t of tokens) {
    if (t.kind !== "option" || t.name === undefined) continue;
    const o = options[t.name];
    if (o === undefined || o.type !== "string" || o.multiple === true) continue;
    const values = seen.get(t.name) ?? [];
    values.push(t.value ?? "");
    seen.set(t.name, values);
    if (values.length > 1) throw new UsageError(`--${t.name} was given more than once (${values.map((x) => JSON.stringify(x)).join(", ")}): give it once`);
  }
}

/** `parseArgs(config)`, refusing a single-value option given twice ({@link rejectRepeatedOptions}). */
export function parseStrict<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  const r = parseArgs({ ...config, tokens: true });
  rejectRepeatedOptions(r.tokens as readonly { kind: string; name?: string; value?: string }[], config.options ?? {});
  return r as ReturnType<typeof parseArgs<T>>;
}
