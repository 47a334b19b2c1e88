/**
 * Reading a command's options the way GNU getopt does, so that a guard cannot be dodged by
 * clustering (`-ni`), attaching values (`-ofile`), abbreviating long options (`--out=x` for
 * `--output`) or putting options after operands (GNU permutes them).
 */

export interface OptionSpec {
  /** Short options that take a value: the rest of the cluster, or the next argument. */
  shortWithValue?: string;
  /** Short options whose value is optional and can only be attached (`-Iseconds`): the rest of the cluster. */
  shortWithOptionalValue?: string;
  /** Long options that take the next argument as their value when written without "=". */
  longWithValue?: readonly string[];
  /** Long options whose value may be left out when they are the last argument (git's "--merged [COMMIT]"). */
  longWithLastArgDefault?: readonly string[];
  /** Other long options the program has, so that abbreviations are read as the program reads them. */
  knownLong?: readonly string[];
  /** Short options refused, with why. */
  deniedShort?: Record<string, string>;
  /** Long options refused (also any abbreviation of them), with why. */
  deniedLong?: Record<string, string>;
  /** When set, only these short options are accepted. */
  allowedShort?: string;
  /** When set, only these long options are accepted (written in full). */
  allowedLong?: readonly string[];
  /**
   * The program takes long options only as written in full (Go's pflag: kubectl), so a known
   * option is never read as an abbreviation of a refused one (`--client` is not `--client-key`).
   */
  exactLong?: boolean;
  /** Options stop at the first operand (POSIX), instead of GNU permutation. */
  stopAtOperand?: boolean;
  /** Words like "-5" are operands or numbers (head -5), not option clusters. */
  numericShortIsValue?: boolean;
}

export interface ScannedOptions {
  /** Every short option letter seen. */
  short: Set<string>;
  /** Every long option seen, without its value. */
  long: string[];
  /** Values of options, in order, keyed by option ("-o", "--output"). */
  values: Array<[string, string]>;
  operands: string[];
}

export class OptionRefusal extends Error {
  override name = 'OptionRefusal';
}

/** Whether `name` (like "--out") may stand for `full` (like "--output"), or contains it. */
function longMatches(name: string, full: string): boolean {
  return (full.startsWith(name) && name.length >= 3) || name.startsWith(full);
}

/**
 * The long option getopt_long would take `written` for: itself when known, else the one known
 * option it abbreviates. Two or more candidates: getopt refuses it as ambiguous, and so do we.
 */
function canonicalLong(command: string, written: string, spec: OptionSpec): string {
  const known = new Set([...(spec.longWithValue ?? []), ...(spec.allowedLong ?? []), ...(spec.knownLong ?? [])]);
  if (known.has(written)) return written;
  const matches = [...known].filter((full) => full.startsWith(written));
  if (matches.length > 1) throw new OptionRefusal(`${command}: the option ${written} is ambiguous (${matches.join(', ')}); write it in full`);
  return matches[0] ?? written;
}

export function scanOptions(command: string, args: readonly string[], spec: OptionSpec): ScannedOptions {
  const result: ScannedOptions = { short: new Set(), long: [], values: [], operands: [] };
  let onlyOperands = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (onlyOperands || arg === '-' || !arg.startsWith('-')) {
      result.operands.push(arg);
      if (spec.stopAtOperand) onlyOperands = true;
      continue;
    }
    if (arg === '--') {
      onlyOperands = true;
      continue;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = canonicalLong(command, eq < 0 ? arg : arg.slice(0, eq), spec);
      for (const [denied, why] of Object.entries(spec.deniedLong ?? {})) {
        if (spec.exactLong ? name === denied : longMatches(name, denied))
          throw new OptionRefusal(`${command}: the option ${name} (${denied}) is refused: ${why}`);
      }
      if (spec.allowedLong && !spec.allowedLong.includes(name)) {
        throw new OptionRefusal(
          `${command}: the option ${name} is not among the options allowed in the restricted shell (${spec.allowedLong.join(' ') || 'none'})`,
        );
      }
      result.long.push(name);
      if (eq >= 0) result.values.push([name, arg.slice(eq + 1)]);
      else if (spec.longWithLastArgDefault?.includes(name) && i === args.length - 1) continue;
      else if (spec.longWithValue?.includes(name)) {
        const value = args[i + 1];
        if (value === undefined) throw new OptionRefusal(`${command}: the option ${name} needs a value`);
        result.values.push([name, value]);
        i += 1;
      }
      continue;
    }
    if (spec.numericShortIsValue && /^-\d+$/.test(arg)) {
      result.values.push(['-', arg.slice(1)]);
      continue;
    }
    for (let k = 1; k < arg.length; k++) {
      const letter = arg[k]!;
      const denied = spec.deniedShort?.[letter];
      if (denied) throw new OptionRefusal(`${command}: the option -${letter} is refused: ${denied}`);
      if (spec.allowedShort !== undefined && !spec.allowedShort.includes(letter)) {
        throw new OptionRefusal(
          `${command}: the option -${letter} is not among the options allowed in the restricted shell ` +
            `(${[...spec.allowedShort].map((l) => `-${l}`).join(' ') || 'none'})`,
        );
      }
      result.short.add(letter);
      if (spec.shortWithOptionalValue?.includes(letter)) {
        if (k + 1 < arg.length) result.values.push([`-${letter}`, arg.slice(k + 1)]);
        break;
      }
      if (spec.shortWithValue?.includes(letter)) {
        let value = arg.slice(k + 1);
        if (value === '') {
          const next = args[i + 1];
          if (next === undefined) throw new OptionRefusal(`${command}: the option -${letter} needs a value`);
          value = next;
          i += 1;
        }
        result.values.push([`-${letter}`, value]);
        break;
      }
    }
  }
  return result;
}
