// A reader of the Prometheus text exposition format (version 0.0.4), for tests: samples with their labels.

/** One sample line. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A parsed scrape: its samples, and the TYPE declared per metric family. */
export interface Scrape {
  readonly samples: readonly Sample[];
  readonly types: ReadonlyMap<string, string>;
  /** The one sample of `name` whose labels include `labels`; throws if none or several match. */
  one(name: string, labels?: Record<string, string>): number;
  /** Every sample of `name`. */
  all(name: string): Sample[];
}

function unescape(v: string): string {
  return v.replace(/\\(["\\n])/g, (_m, c: string) => (c === "n" ? "\n" : c));
}

/** Parses `text`; throws on a line that is neither a comment nor a well-formed sample. */
export function parsePrometheus(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("#")) {
      const t = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (t !== null) types.set(t[1]!, t[2]!);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3] !== undefined && m[3] !== "") {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;
      let consumed = 0;
      for (const l of m[3].matchAll(re)) {
        labels[l[1]!] = unescape(l[2]!);
        consumed += l[0].length;
      }
      if (consumed !== m[3].length) throw new Error(`bad labels: ${line}`);
    }
    // values are Go floats: "+Inf", "-Inf" and "NaN" in any case
    const text = m[4]!.toLowerCase();
    const v = text === "+inf" || text === "inf" ? Infinity : text === "-inf" ? -Infinity : text === "nan" ? NaN : Number(m[4]);
    if (Number.isNaN(v) && text !== "nan") throw new Error(`bad value: ${line}`);
    samples.push({ name: m[1]!, labels, value: v });
  }
  const all = (name: string) => samples.filter((s) => s.name === name);
  return {
    samples,
    types,
    all,
    one(name, want = {}) {
      const hits = all(name).filter((s) => Object.entries(want).every(([k, v]) => s.labels[k] === v));
      if (hits.length !== 1) throw new Error(`${hits.length} samples of ${name} ${JSON.stringify(want)}`);
      return hits[0]!.value;
    },
  };
}
