/** Where a command writes: `out` for results (stdout), `err` for progress and errors (stderr). */
export interface Io {
  out(s: string): void;
  err(s: string): void;
  /** True when stderr is a terminal (progress lines redraw in place). */
  readonly tty: boolean;
}

/** The process's own stdout and stderr. */
export const processIo: Io = {
  out: (s) => void process.stdout.write(s),
  err: (s) => void process.stderr.write(s),
  tty: process.stderr.isTTY === true,
};
