import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository root: the packaging tests run their scripts from it. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a program in the repository root and resolves with its exit code and output, failing or
 * not. Asynchronous on purpose: the test registry's token server lives in the test process, so a
 * synchronous child would wait on it forever.
 */
export function exec(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(bin, args, { cwd: ROOT, env, maxBuffer: 64 * 2 ** 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
