// Waiting for a promise at most so long, the timer cleared as soon as it
// settles (a pending timer would keep a closing process, or a scrape, waiting).

/** What `promise` answers within `ms`, or undefined when it fails or takes longer (its answer is then dropped). */
export async function answerWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `promise` settles (either way) within `ms`. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  return (await answerWithin(settled, ms)) === true;
}
