// What was thrown, as one line of text: catch clauses receive `unknown`.

/** An Error's message, or the string form of anything else that was thrown. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
