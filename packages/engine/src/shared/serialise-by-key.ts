// One git operation per bare mirror at a time in this process: git refuses, rather than waits, when
// another fetch holds the mirror's ref locks. Used by the workflow fetch (freeze) and the manual
// trigger's ref check, which share mirrors.
const queues = new Map<string, Promise<unknown>>();

/** Runs `fn` after every earlier call with the same key has settled (whatever their outcome). */
export function serialiseByKey<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const next = (queues.get(key) ?? Promise.resolve()).then(fn, fn);
  const tail = next.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return next;
}

/** git's words for "another fetch holds this mirror's locks": worth a brief retry, not a verdict on the forge. */
export const MIRROR_LOCK_COLLISION =
  /shallow\.lock|\.lock': File exists|shallow file has changed|Unable to create .*\.lock|cannot lock ref/i;
