import type { LlmStandInRequest } from '../../testcluster/stand-ins/llm.ts';
import { wazuhAlert } from '../../testcluster/stand-ins/wazuh-alerts.ts';

/** How often each tenant's indexer gets new alerts, and how many each time. */
export const TRICKLE = { everyMs: 10_000, perTick: 3 } as const;

/** The four Wazuh rules of wazuh-alerts.ts, in its order: sshd 5712, PAM 5503, FIM 550, SQLi. */
const KINDS = 4;

/** Where a tenant's alerts go: its indexer, written as the manager's Filebeat would. */
export interface AlertSink {
  append(...alerts: Record<string, unknown>[]): void;
}

export interface Trickle {
  /** Alerts written into each indexer so far. */
  written(): number;
  stop(): void;
}

/**
 * Feeds each tenant's indexer a few realistic Wazuh alerts now and every
 * `TRICKLE.everyMs`, as a manager would write them: timestamped now, rules and agents mixed so
 * that ingest opens several investigations and each triage path gets some. The adapters find
 * them with their ordinary searches.
 */
export function startTrickle(indexers: ReadonlyMap<string, AlertSink>): Trickle {
  let n = 0;
  const tick = () => {
    const start = new Date();
    for (const [slug, indexer] of indexers) {
      for (let i = 0; i < TRICKLE.perTick; i++) {
        const k = n + i;
        indexer.append(
          wazuhAlert(k, {
            start,
            stepMs: 0,
            manager: `wazuh-${slug}`,
            kind: k % KINDS,
            // Rotating agents independently of rules spreads alerts over rule/agent groups.
            agent: Math.floor(k / KINDS),
          }),
        );
      }
    }
    n += TRICKLE.perTick;
  };
  tick();
  const timer = setInterval(tick, TRICKLE.everyMs);
  return { written: () => n, stop: () => clearInterval(timer) };
}

/**
 * The stand-in model's triage: file-integrity changes are routine (false positive, close, high
 * confidence: the pipeline closes them), brute force is a true positive to escalate (a review
 * proposing a case), anything else inconclusive at low confidence (a review).
 */
export function demoTriageAnswer(request: LlmStandInRequest): string {
  const prompt = JSON.stringify(request.body.messages ?? request.body);
  if (prompt.includes('Integrity checksum changed')) {
    return JSON.stringify({
      verdict: 'false_positive',
      severity: 'low',
      confidence: 0.92,
      rationale: 'A configuration file changed during the maintenance window; no other signal.',
      recommended_action: 'close',
    });
  }
  if (prompt.includes('brute force')) {
    return JSON.stringify({
      verdict: 'true_positive',
      severity: 'high',
      confidence: 0.86,
      rationale: 'Repeated invalid-user logins from one external address: a brute-force attempt.',
      recommended_action: 'escalate',
    });
  }
  return JSON.stringify({
    verdict: 'inconclusive',
    severity: 'medium',
    confidence: 0.4,
    rationale: 'The alerts alone do not show whether this activity was expected.',
    recommended_action: 'review',
  });
}
