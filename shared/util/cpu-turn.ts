/**
 * Takes turns at the CPU-heavy steps (parse, bill) so that timers are never starved: each
 * `await cpuTurn()` resumes in a check phase of its own, one waiter per event-loop iteration,
 * and between two iterations Node runs its due timers (lease renewals, visibility extensions).
 * Without it, the callbacks of many messages whose gunzip finished together run back to back
 * in one poll phase, and a timer waits for all of them.
 *
 * The bound: a timer is late by at most one step of one chunk (parse, or bill and serialize;
 * a few ms per 1,000 transactions) plus what one poll phase delivers. A turn costs one
 * setImmediate; with nobody waiting it costs one too, so a lone message is not slowed.
 */
const waiting: (() => void)[] = [];
let granting = false;

function grant(): void {
  const next = waiting.shift();
  if (!next) {
    granting = false;
    return;
  }
  next();
  // The next waiter runs in the next iteration's check phase, after the timers phase.
  setImmediate(grant);
}

export function cpuTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (granting) return;
    granting = true;
    setImmediate(grant);
  });
}
