// A Server-Sent Events client for GET /v1/events/stream tests: the events parsed as they arrive,
// comments and the retry hint.
import http, { type IncomingMessage } from "node:http";

export interface SseEvent {
  id?: string;
  event?: string;
  data?: string;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage["headers"];
  events: SseEvent[];
  comments: string[];
  retry?: number;
  body: string;
  /** When the server ended the response (Date.now()), once it has. */
  endedAt?: number;
  close(): void;
}

/** Opens `base`/v1/events/stream; resolves on the response's headers. */
export function openStream(base: string, token: string, opts: { query?: string; lastEventId?: string } = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/v1/events/stream${opts.query ? `?${opts.query}` : ""}`, {
      headers: { Authorization: `Bearer ${token}`, Accept: "text/event-stream", ...(opts.lastEventId ? { "Last-Event-ID": opts.lastEventId } : {}) },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      const s: SseStream = { status: res.statusCode!, headers: res.headers, events: [], comments: [], body: "", close: () => req.destroy() };
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        s.body += chunk;
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const e: SseEvent = {};
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) s.comments.push(line.slice(1).trim());
            else if (line.startsWith("retry: ")) s.retry = Number(line.slice(7));
            else if (line.startsWith("id: ")) e.id = line.slice(4);
            else if (line.startsWith("event: ")) e.event = line.slice(7);
            else if (line.startsWith("data: ")) e.data = line.slice(6);
          }
          if (e.data !== undefined) s.events.push(e);
        }
      });
      res.on("end", () => (s.endedAt ??= Date.now()));
      res.on("error", () => undefined);
      resolve(s);
    });
  });
}

/** The seq of an event's data. */
export const seqOf = (e: SseEvent) => (JSON.parse(e.data!) as { seq: string }).seq;
