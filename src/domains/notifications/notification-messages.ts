import type { Notification } from './notification-types.ts';

/**
 * The body a receiver gets. `standard` is the Standard Webhooks envelope as JSON; `slack` is the
 * shape Slack's incoming webhooks take (`text`, with `blocks` for the formatted version), so the
 * URL of a Slack app works as it is. Both are signed alike.
 */
export function renderBody(format: 'standard' | 'slack', notification: Notification): string {
  if (format === 'standard') return JSON.stringify(notification);
  const text = summaryOf(notification);
  return JSON.stringify({
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*svc* ${escapeSlack(text)}` } },
      {
        type: 'context',
        elements: [{ type: 'mrkdwn', text: `${notification.type} · ${notification.timestamp}` }],
      },
    ],
  });
}

/** Slack's mrkdwn treats these three as markup; names come from people and must not. */
function escapeSlack(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** One line a person reads in a chat channel. */
export function summaryOf(n: Notification): string {
  const d = n.data;
  const tenant = typeof d.tenant_name === 'string' ? `${d.tenant_name}: ` : '';
  switch (n.type) {
    case 'review.waiting':
      return `${tenant}review of "${d.proposed_action}" waiting for ${d.waiting_minutes} minutes`;
    case 'provisioning.failed':
      return `${tenant}provisioning failed at step ${d.step} (${d.code ?? 'error'})`;
    case 'drift.detected':
      return `${tenant}the tenant drifted from its cluster state`;
    case 'adapter.silent':
      return `${tenant}no heartbeat from the adapter for ${d.silent_minutes} minutes`;
    case 'llm.budget_exhausted':
      return `${tenant}the daily LLM budget of ${d.day} is spent; triage calls are refused`;
    case 'incident.severity':
      return `${tenant}${d.severity} incident "${d.title}"`;
    case 'webhook.test':
      return 'test notification: this webhook is reachable and signed';
  }
}
