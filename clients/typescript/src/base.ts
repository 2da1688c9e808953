/**
 * The errors every call may raise. The service's refusals each have a class of their own (gen/errors.ts,
 * one per code of the catalogue), all subclasses of MemoryApiError.
 */

/** Anything this client throws. */
export class MemoryClientError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * No answer: the service was unreachable, the connection broke, or the call timed out. `mayHaveApplied`
 * is true for a mutation whose request may have reached the service: read the state before sending it again.
 */
export class MemoryConnectionError extends MemoryClientError {
  readonly mayHaveApplied: boolean;

  constructor(message: string, options: { mayHaveApplied: boolean; cause?: unknown }) {
    super(message);
    this.mayHaveApplied = options.mayHaveApplied;
    if (options.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

/** The service answered with a refusal: `code` is the catalogue's, `message` its sentence. */
export class MemoryApiError extends MemoryClientError {
  static readonly code: string = 'unexpected_response';
  static readonly status: number = 0;
  static readonly retryable: boolean = false;

  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown>;
  /** Seconds the service asked us to wait (Retry-After), when it said so. */
  readonly retryAfter: number | null;

  constructor(
    message: string,
    options: { code?: string | null; status?: number; details?: Record<string, unknown> | null; retryAfter?: number | null } = {},
  ) {
    super(message);
    const cls = new.target as unknown as typeof MemoryApiError;
    this.code = options.code ?? cls.code;
    this.status = options.status ?? cls.status;
    this.details = { ...(options.details ?? {}) };
    this.retryAfter = options.retryAfter ?? null;
  }

  override toString(): string {
    return `${this.code} (${this.status}): ${this.message}`;
  }
}

/**
 * Whether the same request may succeed later: 5xx and 429 say the service, not the request, was the
 * trouble (agent_memory.api.errors.retryable_status; read by status, since a proxy's own page has no code).
 */
export function retryableStatus(status: number): boolean {
  return status >= 500 || status === 429;
}
