import { spawn } from 'node:child_process';

/**
 * pg_dump and pg_restore, found on PATH (the image carries the server's major, docs/operations.md
 * "Backup and restore"). A client older than the server refuses to dump it, so the majors are
 * compared first and the operator is told which client to install.
 */
export type PgTool = 'pg_dump' | 'pg_restore';

export interface ToolRun {
  code: number;
  stdout: string;
  stderr: string;
}

export class BackupError extends Error {
  override name = 'BackupError';
}

export function runTool(
  tool: PgTool,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    // stdin is a closed pipe rather than 'ignore' (/dev/null), which a bare root may lack.
    const child = spawn(tool, [...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end();
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT'
          ? new BackupError(
              `${tool} not found on PATH; install the PostgreSQL client of the server's major version (docs/operations.md "Backup and restore")`,
            )
          : error,
      ),
    );
    child.on('close', (code) =>
      resolve({
        code: code ?? 1,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });
}

/** The tool's major version, from `pg_dump --version` ("pg_dump (PostgreSQL) 18.6"). */
export async function toolMajor(tool: PgTool): Promise<number> {
  const run = await runTool(tool, ['--version'], process.env);
  const match = /\(PostgreSQL\)\s+(\d+)/.exec(run.stdout);
  if (run.code !== 0 || !match?.[1]) {
    throw new BackupError(`${tool} --version printed no PostgreSQL version: ${run.stdout.trim()}`);
  }
  return Number(match[1]);
}

/** Refuses a client older than the server: pg_dump would refuse anyway, less clearly. */
export async function assertClientFits(tool: PgTool, serverVersionNum: number): Promise<number> {
  const serverMajor = Math.floor(serverVersionNum / 10000);
  const major = await toolMajor(tool);
  if (major < serverMajor) {
    throw new BackupError(
      `${tool} ${major} is older than the PostgreSQL ${serverMajor} server; put ${tool} ${serverMajor} or newer first on PATH`,
    );
  }
  return major;
}

/** The last lines of a tool's error output, enough to say why without flooding the terminal. */
export function toolFailure(tool: PgTool, run: ToolRun): BackupError {
  const tail = run.stderr.trim().split('\n').slice(-5).join('\n');
  return new BackupError(`${tool} failed (exit ${run.code}): ${tail}`);
}
