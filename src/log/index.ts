import { AsyncLocalStorage } from 'node:async_hooks';
import { type Logger, pino } from 'pino';

export type { Logger };

interface LogContext {
  requestId: string;
}

const context = new AsyncLocalStorage<LogContext>();

/** Runs fn with a request id that every log line and audit row written inside it carries. */
export function withRequestId<T>(requestId: string, fn: () => T): T {
  return context.run({ requestId }, fn);
}

export function currentRequestId(): string | undefined {
  return context.getStore()?.requestId;
}

/** Structured JSON logs on stdout; the request id comes from the async context, not callers. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'svc' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => {
        const requestId = currentRequestId();
        return requestId === undefined ? {} : { request_id: requestId };
      },
      redact: { paths: ['password', '*.password', 'req.headers.cookie'], remove: true },
    },
    destination ?? pino.destination(1),
  );
}
