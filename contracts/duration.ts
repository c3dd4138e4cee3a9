/**
 * A duration as svc's settings take it (`SVC_*` durations, system chart values that become
 * them): digits and one unit, `500ms`, `30s`, `15m`, `24h`, `30d`. One pattern for both, so the
 * chart never accepts a duration svc would refuse at start.
 */
export const DURATION_PATTERN = '^[0-9]{1,9}(ms|s|m|h|d)$';
