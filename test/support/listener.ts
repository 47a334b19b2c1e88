import { afterAll, beforeAll } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A loopback HTTP listener that records the path of every request reaching it (what left the machine, in a test). */
export interface RecordingListener {
  url: string;
  arrivals: string[];
  close(): Promise<void>;
}

export async function startRecordingListener(): Promise<RecordingListener> {
  const arrivals: string[] = [];
  const server = createServer((req, res) => {
    arrivals.push(req.url ?? '');
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A listener for the whole test file: started before its tests, closed after them; read `url` and `arrivals` inside a test. */
export function listenerForFile(): { readonly url: string; readonly arrivals: string[] } {
  let listener: RecordingListener | undefined;
  beforeAll(async () => {
    listener = await startRecordingListener();
  });
  afterAll(() => listener?.close());
  return {
    get url() {
      return listener!.url;
    },
    get arrivals() {
      return listener!.arrivals;
    },
  };
}
