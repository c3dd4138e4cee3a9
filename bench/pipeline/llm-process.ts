/**
 * The LLM stand-in (test/support/llm-stand-in.ts) in a process of its own, started by
 * bench/pipeline/llm.ts: sharing svc's event loop, its timers would fire late whenever svc is
 * busy and count svc's own work as model time. HTTPS with a fresh loopback certificate (svc
 * only calls https:// model URLs), a fixed generation latency and at most `concurrency`
 * generations at once, as a model server with that many slots.
 *
 * Answers alternate between a confident false positive the pipeline closes by itself and a
 * true positive it sends to a human review, both valid triage answers (src/domains/pipeline/
 * prompt.ts). IPC: sends `{ url, ca }` when listening; answers `stats` with the request count
 * and the most generations seen at once; exits when the parent disconnects.
 */
import { startLlmStandIn } from '../../test/support/llm-stand-in.ts';
import { loopbackCertificate } from '../../test/support/loopback-tls.ts';

const CLOSE = JSON.stringify({
  verdict: 'false_positive',
  severity: 'low',
  confidence: 0.9,
  rationale: 'Routine activity matching a known benign pattern.',
  recommended_action: 'close',
});
const ESCALATE = JSON.stringify({
  verdict: 'true_positive',
  severity: 'high',
  confidence: 0.9,
  rationale: 'Repeated failed logins from one external address against a non-existent user.',
  recommended_action: 'escalate',
});

const latencyMs = Number(process.env.BENCH_LLM_LATENCY_MS ?? 300);
const concurrency = Number(process.env.BENCH_LLM_CONCURRENCY ?? 32);

const tls = await loopbackCertificate();
const llm = await startLlmStandIn({ tls, latencyMs, concurrency });
let answered = 0;
llm.respond(() => {
  answered += 1;
  return answered % 2 === 0 ? ESCALATE : CLOSE;
});

process.on('message', (message) => {
  if (message === 'stats') {
    process.send?.({ requests: llm.requests.length, peakInFlight: llm.stats().peakInFlight });
  }
});
process.on('disconnect', () => {
  llm.close().finally(() => process.exit(0));
});
process.send?.({ url: llm.openaiBaseUrl, ca: tls.cert });
