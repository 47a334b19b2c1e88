import type { Backend } from '../../backends/types.js';

/** Bytes start..end (exclusive) of a file through the backend; fewer when the file ends first. */
export async function readBytes(backend: Backend, path: string, start: number, end: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of backend.readStream(path, { start, end })) chunks.push(chunk);
  return Buffer.concat(chunks);
}
