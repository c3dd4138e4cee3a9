import Type from 'typebox';

/** What `svc tenants …` needs to reach a running svc; src/cli reads these itself. */
export const CLI_SETTINGS = {
  SVC_URL: {
    schema: Type.String({ pattern: '^https?://[^\\s/]+(/[^\\s]*)?$', maxLength: 2048 }),
    expected: 'the URL of a running svc for svc tenants …, e.g. http://127.0.0.1:8080',
  },
  SVC_CLI_EMAIL: {
    schema: Type.String({ pattern: '^[^@\\s]+@[^@\\s]+$', maxLength: 254 }),
    expected: 'the email of the MSSP user svc tenants … signs in as',
  },
  SVC_CLI_PASSWORD: {
    schema: Type.String({ minLength: 1, maxLength: 4096 }),
    expected: 'the password of SVC_CLI_EMAIL, at most 4096 characters',
  },
} as const;
