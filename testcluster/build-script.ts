import { spawn } from 'node:child_process';

/**
 * Runs one of the per-machine build scripts (testcluster/build.sh, testcluster/opensearch/build.sh):
 * its progress goes to stderr as it comes, and it ends by printing `<KEY>=<dir>` on stdout, the
 * cached result. Answers that directory, or throws with the script's last error line.
 */
export async function runBuildScript(script: string, key: string): Promise<string> {
  const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    process.stderr.write(chunk);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const value = new RegExp(`^${key}=(.+)$`, 'm').exec(stdout)?.[1];
  if (code !== 0 || value === undefined) {
    const lastLine = stderr.trim().split('\n').at(-1) ?? '';
    throw new Error(lastLine || `${script} exited with ${code}`);
  }
  return value;
}
