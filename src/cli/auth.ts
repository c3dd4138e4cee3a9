import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { composeServices, openCore } from '../app/compose.ts';
import { type PasswordWeakness, passwordWeakness } from '../auth/password-policy.ts';
import {
  generatePassword,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  passwordLength,
} from '../auth/passwords.ts';
import type { Config } from '../config/index.ts';
import type { UserService } from '../domains/users/user-service.ts';
import type { Logger } from '../log/index.ts';

/** Asks on the terminal without echoing what is typed. */
async function promptHidden(question: string): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  try {
    return await new Promise<string>((resolve) => {
      rl.question(question, resolve);
      muted = true;
    });
  } finally {
    rl.close();
    process.stderr.write('\n');
  }
}

/**
 * Only the first line of piped stdin is the password: `printf 'pw\npw\n'` (typed twice, as the
 * prompt asks) must not become a password with a newline in it (docs/auth.md "Password policy").
 */
async function readFirstLine(): Promise<string> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const line of lines) return line;
    return '';
  } finally {
    lines.close();
    // The rest is never read; a writer that keeps going (`yes |`) must not hold svc open.
    process.stdin.destroy();
  }
}

const WEAKNESS: Record<PasswordWeakness, string> = {
  whitespace_only: 'it is whitespace only',
  common_password: 'it is a common password',
  control_character: 'it contains a control character such as a tab',
};

/** The password from --generate, a double prompt on a TTY, or the first line of stdin. */
async function obtainPassword(
  generate: boolean,
): Promise<{ password: string; generated: boolean }> {
  if (generate) return { password: generatePassword(), generated: true };
  let password: string;
  if (process.stdin.isTTY) {
    password = await promptHidden('New password: ');
    const again = await promptHidden('Repeat password: ');
    if (again !== password) throw new Error('the two passwords differ');
  } else {
    password = await readFirstLine();
  }
  const length = passwordLength(password);
  if (length < MIN_PASSWORD_LENGTH || length > MAX_PASSWORD_LENGTH) {
    throw new Error(
      `the password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
    );
  }
  const weakness = passwordWeakness(password);
  if (weakness) throw new Error(`the password is refused: ${WEAKNESS[weakness]}; choose another`);
  return { password, generated: false };
}

/** The user service over the configured database, for the length of fn. */
async function withUsers<T>(
  config: Config,
  logger: Logger,
  fn: (users: UserService) => Promise<T>,
): Promise<T> {
  const core = await openCore(config, logger, { migrate: 'embedded', poolSize: 2 });
  try {
    return await fn(composeServices(core).users);
  } finally {
    await core.close();
  }
}

export async function runSetPassword(
  config: Config,
  logger: Logger,
  email: string,
  generate: boolean,
): Promise<void> {
  const { password, generated } = await obtainPassword(generate);
  await withUsers(config, logger, (users) => users.resetPasswordByEmail(email, password));
  report(`password set for ${email}`, password, generated);
}

export async function runCreateAdmin(
  config: Config,
  logger: Logger,
  email: string,
  generate: boolean,
): Promise<void> {
  const { password, generated } = await obtainPassword(generate);
  await withUsers(config, logger, (users) => users.createPlatformAdmin(email, password));
  report(`platform_admin ${email} created`, password, generated);
}

/** A generated password is printed once, here; a typed one never is. */
function report(done: string, password: string, generated: boolean): void {
  process.stdout.write(
    generated
      ? `${done}; password (shown once; must be changed at next sign-in):\n${password}\n`
      : `${done}; the password must be changed at next sign-in\n`,
  );
}
