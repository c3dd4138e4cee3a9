/**
 * Ready-to-paste agent installs for one tenant (docs/enrollment.md "The commands"): the Wazuh
 * agent packages read their documented deployment variables (WAZUH_MANAGER,
 * WAZUH_REGISTRATION_SERVER, …) at install time and write them into the agent's ossec.conf, so
 * the agent enrolls on its first start. The packages are named, not fetched: an MSSP installs
 * from its own mirror or the vendor's download page, and the version matches the tenant's manager
 * (the monitor chart's appVersion), since an agent newer than its manager is refused.
 */

/** The manager version the tenant package runs (charts/svc-tenant/charts/monitor appVersion). */
export const AGENT_VERSION = '4.9.2';

export const AGENT_PACKAGES = {
  deb: `wazuh-agent_${AGENT_VERSION}-1_amd64.deb`,
  rpm: `wazuh-agent-${AGENT_VERSION}-1.x86_64.rpm`,
  msi: `wazuh-agent-${AGENT_VERSION}-1.msi`,
} as const;

/** The group new agents join; the manager creates `default` itself. */
export const AGENT_GROUP = 'default';

export interface CommandInput {
  slug: string;
  /** The address agents dial for both events and enrollment (a DNS name or an IP literal). */
  address: string;
  ports: { events: number; enrollment: number };
  password: string;
  caPem: string;
}

export interface InstallCommands {
  deb: string;
  rpm: string;
  msi: string;
}

/**
 * Every value is one svc made or checked: a DNS name or IP, integers, the slug (DNS label),
 * a base64url password and a PEM. Quoted all the same, so a later change of any of them cannot
 * turn into shell syntax.
 */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The Wazuh agent's documented deployment variables, the same on every platform. */
function deploymentVariables(input: CommandInput, caPath: string): [string, string][] {
  return [
    ['WAZUH_MANAGER', input.address],
    ['WAZUH_MANAGER_PORT', String(input.ports.events)],
    ['WAZUH_REGISTRATION_SERVER', input.address],
    ['WAZUH_REGISTRATION_PORT', String(input.ports.enrollment)],
    ['WAZUH_REGISTRATION_PASSWORD', input.password],
    ['WAZUH_REGISTRATION_CA', caPath],
    ['WAZUH_AGENT_GROUP', AGENT_GROUP],
  ];
}

function linux(input: CommandInput, caPath: string, install: string): string {
  const vars = deploymentVariables(input, caPath)
    .map(([name, value]) => `${name}=${shellQuote(value ?? '')}`)
    .join(' ');
  return [
    `sudo tee ${caPath} >/dev/null <<'SVC_CA'`,
    input.caPem.trimEnd(),
    'SVC_CA',
    `sudo ${vars} ${install}`,
    'sudo systemctl daemon-reload && sudo systemctl enable --now wazuh-agent',
  ].join('\n');
}

function windows(input: CommandInput, caPath: string): string {
  const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
  const vars = deploymentVariables(input, caPath)
    .map(([name, value]) => `${name}=${quote(value ?? '')}`)
    .join(' ');
  return [
    '# PowerShell, as Administrator, in the folder holding the package',
    `Set-Content -Path ${quote(caPath)} -Encoding ascii -Value @'`,
    input.caPem.trimEnd(),
    `'@`,
    `Start-Process msiexec.exe -Wait -ArgumentList '/i ${AGENT_PACKAGES.msi} /q ${vars.replaceAll("'", "''")}'`,
    'NET START WazuhSvc',
  ].join('\n');
}

export function installCommands(input: CommandInput): InstallCommands {
  const linuxCa = `/etc/ssl/certs/svc-enrollment-${input.slug}.pem`;
  return {
    deb: linux(input, linuxCa, `dpkg -i ./${AGENT_PACKAGES.deb}`),
    rpm: linux(input, linuxCa, `rpm -ihv ./${AGENT_PACKAGES.rpm}`),
    msi: windows(input, `C:\\ProgramData\\svc-enrollment-${input.slug}.pem`),
  };
}
