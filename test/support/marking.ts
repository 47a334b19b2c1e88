/**
 * What a request carries without quarry's marking of untrusted data (src/agent/marking.ts), for tests
 * that check the words themselves: marking has tests of its own (test/agent/marking.test.ts).
 */

/** The system prompt as built from the template: without the "Untrusted data" note every request ends with. */
export function withoutMarkingNote(system: string): string {
  return system.replace(/\nUntrusted data:\n- Text between <<data-[0-9a-f]{32} [\s\S]*$/, '');
}

/** A marked tool result's text without its boundary lines (anything else as it is). */
export function unmarked(text: string | null | undefined): string {
  const value = text ?? '';
  const match = /^<<data-([0-9a-f]{32}) source="[^"\n]*">>\n([\s\S]*)\n<<end-\1>>$/.exec(value);
  return match ? (match[2] as string) : value;
}
