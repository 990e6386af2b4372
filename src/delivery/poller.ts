// The background loop of the delivery and webhook workers: `poll` runs `intervalMs` after the
// previous run ended (runs never overlap) until stop(), which aborts the signal and waits for the run
// in flight.
export interface Poller {
  stop(): Promise<void>;
}

export function startPoller(intervalMs: number, poll: (signal: AbortSignal) => Promise<void>): Poller {
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const schedule = () => {
    if (stopping.signal.aborted) return;
    timer = setTimeout(() => {
      running = poll(stopping.signal).finally(() => {
        running = undefined;
        schedule();
      });
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
