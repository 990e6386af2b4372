// stub
export async function guestContext(_message: unknown, _group: string, _query: unknown): Promise<unknown> {
  throw new Error("not yet");
}
