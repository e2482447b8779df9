/**
 * At most `perMinute` log lines a minute for one kind of event, so that a client hammering a route
 * with bad requests cannot flood the log (nor the Application Insights bill). What it holds back is
 * counted and said on the next line it lets through.
 */
export class LogBudget {
  private windowStart = -Infinity;
  private used = 0;
  private held = 0;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The line to write now (noting how many were held back before it), or undefined: stay quiet. */
  pass(line: string): string | undefined {
    const t = this.now();
    if (t - this.windowStart >= 60_000) {
      this.windowStart = t;
      this.used = 0;
    }
    if (this.used >= this.perMinute) {
      this.held++;
      return undefined;
    }
    this.used++;
    const note = this.held > 0 ? ` (${this.held} more like it before this one were not logged)` : '';
    this.held = 0;
    return `${line}${note}`;
  }
}
