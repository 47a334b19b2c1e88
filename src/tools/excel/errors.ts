import type { ToolErrorKind } from '../core/types.js';

/**
 * An expected problem with a workbook (damaged, encrypted, unsupported, missing sheet): the
 * read_excel tool prefixes it with the file's name and reports it without a stack trace.
 */
export class WorkbookError extends Error {
  override name = 'WorkbookError';
  constructor(
    message: string,
    readonly code: ToolErrorKind,
  ) {
    super(message);
  }
}

/** Files named .xls that are text, not a binary workbook: Excel opens them, and so does read_excel (through SheetJS). */
export type TextWorkbookKind = 'xml2003' | 'html' | 'csv';

export const TEXT_WORKBOOK_LABELS: Record<TextWorkbookKind, string> = {
  xml2003: 'a SpreadsheetML 2003 XML workbook',
  html: 'an HTML table',
  csv: 'a text file (CSV or other delimited text)',
};
