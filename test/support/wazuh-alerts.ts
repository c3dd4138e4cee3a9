// Moved to testcluster/stand-ins/wazuh-alerts.ts: the demo (scripts/demo) runs it too.
export * from '../../testcluster/stand-ins/wazuh-alerts.ts';
