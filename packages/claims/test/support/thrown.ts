/** What `f` threw, as `Name: message`, or `"accepted"` — so a test can pin the exact refusal, not only that one happened. */
export const thrown = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
  return "accepted";
};
