import { sep } from 'node:path';

/**
 * Whether `child` is `parent` or lies below it, comparing absolute, resolved paths: the
 * containment check of the rules that keep paths apart (credential files, quarry's home and the
 * system directories for writes, /proc for the restricted shell).
 */
export function isInside(parent: string, child: string): boolean {
  if (parent === child) return true;
  const prefix = parent.endsWith(sep) ? parent : parent + sep;
  return child.startsWith(prefix);
}
