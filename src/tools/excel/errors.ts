/**
 * An expected problem with a workbook (damaged, encrypted, unsupported, missing sheet): the
 * read_excel tool prefixes it with the file's name and reports it without a stack trace.
 */
export class WorkbookError extends Error {
  override name = 'WorkbookError';
  constructor(message: string, readonly code: string) {
    super(message);
  }
}
