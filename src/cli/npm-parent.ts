// A long-running gcs command started by an npm script (`npm start`, `npx gcs simulate`) runs under a
// shell that npm started: npm passes a SIGTERM (a process manager's, a terminal multiplexer's,
// `kill`'s) on to that shell only, which ends without passing it on, so the command would outlive
// npm and keep its port or keep writing. Such a command stops when its parent goes instead. Started
// any other way (node bin/gcs.js, the image's CMD), it outlives its parent as a server should.

/** Calls `stop` once, when this process started under npm has lost its parent (checked twice a second). */
export function stopWithNpmParent(stop: () => void): void {
  if (process.env.npm_lifecycle_event === undefined) return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return; // the OS gives an orphan a new parent
    clearInterval(timer);
    stop();
  }, 500);
  timer.unref();
}
