/**
 * The first SIGINT or SIGTERM from now on (its name). svc's long-running commands take it as
 * soon as their database is open, so a signal while the rest starts (a rollout right after a
 * start, with /metrics already answering) becomes a clean shutdown once startup is done instead
 * of the default kill mid-start. While the database is still being reached a signal kills at once.
 */
export function stopSignal(): Promise<string> {
  return new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}
