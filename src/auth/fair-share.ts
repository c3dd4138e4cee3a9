/**
 * At most `perKey` operations in flight per key (a client address). The password hasher's
 * queue is shared by everyone; this keeps one address from holding more than `perKey` places
 * in it, so a flood from one address cannot crowd out a sign-in from another. A key is held
 * only while its work runs, so memory follows the work in flight, not the history.
 */
export function createFairShare(perKey: number) {
  const held = new Map<string, number>();
  return {
    /** A release function, or undefined when `key` already holds its share. */
    acquire(key: string): (() => void) | undefined {
      const count = held.get(key) ?? 0;
      if (count >= perKey) return undefined;
      held.set(key, count + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (held.get(key) ?? 1) - 1;
        if (left === 0) held.delete(key);
        else held.set(key, left);
      };
    },
    /** Keys holding at least one place. */
    keys: () => held.size,
  };
}
