/**
 * Keeps the first and the last bytes of a stream and counts what falls in between, so that a
 * command printing gigabytes costs a fixed amount of memory.
 */
export class HeadTailBuffer {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  total = 0;

  constructor(
    private readonly headLimit: number,
    private readonly tailLimit: number,
  ) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(this.headLimit - this.headBytes, rest.length);
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(rest.length > this.tailLimit ? Buffer.from(rest.subarray(rest.length - this.tailLimit)) : rest);
    this.tailBytes += Math.min(rest.length, this.tailLimit);
    // Drop whole chunks from the front while what remains still covers the tail limit.
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= this.tailLimit) {
      this.tailBytes -= this.tail.shift()!.length;
    }
    if (this.tail.length > 64) this.tail = [Buffer.concat(this.tail)];
  }

  /** Bytes neither in the head nor in the tail. */
  get dropped(): number {
    return this.total - this.headBytes - Math.min(this.tailBytes, this.tailLimit);
  }

  /** The head, a marker saying how much was dropped (when anything was), and the tail. */
  render(marker: (droppedBytes: number) => string): Buffer {
    const tail = Buffer.concat(this.tail);
    const keptTail = tail.subarray(Math.max(0, tail.length - this.tailLimit));
    const head = Buffer.concat(this.head);
    if (this.dropped === 0) return Buffer.concat([head, keptTail]);
    return Buffer.concat([head, Buffer.from(marker(this.dropped)), keptTail]);
  }
}
