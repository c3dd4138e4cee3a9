import { BYTES_PATTERN, CPU_PATTERN } from '../../../contracts/tenant-values.ts';

/**
 * Kubernetes resource quantities, exactly (BigInt): CPU in millicores, memory and storage in
 * bytes. Floats would round `99999999999999999999Gi` and let sums of large values compare wrong.
 * The grammar is the subset of Kubernetes' that fits each kind: CPU takes only the `m` suffix
 * (so `1Gi` is refused), bytes take decimal and binary SI suffixes but never `m` (`500m` of
 * memory is half a byte).
 */
export type QuantityKind = 'cpu' | 'memory' | 'storage';

export class QuantityError extends Error {
  override name = 'QuantityError';
}

/** The contract's grammar decides validity; this one only splits a valid quantity apart. */
const GRAMMAR = { cpu: new RegExp(CPU_PATTERN), bytes: new RegExp(BYTES_PATTERN) };
const PARTS = /^([0-9]+)(?:\.([0-9]+))?([A-Za-z]*)$/;
const BYTE_UNITS: Record<string, bigint> = {
  '': 1n,
  k: 10n ** 3n,
  M: 10n ** 6n,
  G: 10n ** 9n,
  T: 10n ** 12n,
  P: 10n ** 15n,
  E: 10n ** 18n,
  Ki: 2n ** 10n,
  Mi: 2n ** 20n,
  Gi: 2n ** 30n,
  Ti: 2n ** 40n,
  Pi: 2n ** 50n,
  Ei: 2n ** 60n,
};
/** Kubernetes keeps quantities in an int64; anything larger cannot be a real request. */
const INT64_MAX = 2n ** 63n - 1n;

/** Millicores (cpu) or bytes (memory, storage); throws QuantityError with a message for people. */
export function parseQuantity(kind: QuantityKind, text: string): bigint {
  const m = GRAMMAR[kind === 'cpu' ? 'cpu' : 'bytes'].test(text) ? PARTS.exec(text) : null;
  if (!m) {
    throw new QuantityError(
      kind === 'cpu'
        ? `${JSON.stringify(text)} is not a CPU quantity (cores such as 2 or 0.5, or millicores such as 500m)`
        : `${JSON.stringify(text)} is not a ${kind} quantity (bytes with an optional suffix k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)`,
    );
  }
  const [, whole = '', fraction = '', suffix = ''] = m;
  const scale = 10n ** BigInt(fraction.length);
  const unit = kind === 'cpu' ? (suffix === 'm' ? 1n : 1000n) : (BYTE_UNITS[suffix] ?? 1n);
  const scaled = (BigInt(whole) * scale + BigInt(fraction || '0')) * unit;
  if (scaled % scale !== 0n) {
    throw new QuantityError(
      kind === 'cpu'
        ? `${text} is finer than one millicore`
        : `${text} is not a whole number of bytes`,
    );
  }
  const value = scaled / scale;
  if (value > INT64_MAX) throw new QuantityError(`${text} is larger than Kubernetes can represent`);
  return value;
}
