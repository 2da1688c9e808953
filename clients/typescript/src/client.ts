/**
 * The transport: one principal's view of the API, with the Python client's rules for resending.
 *
 * - Every call has a timeout (`timeoutMs`, default 10 s).
 * - A call that cannot change anything (every GET, the read-only POSTs, a read-only model tool) is resent
 *   on a connection failure, a 5xx or a 429, up to `retries` more times (default 2).
 * - Every mutation carries an `Idempotency-Key` of its own (a fresh UUID, or the caller's), the same on
 *   every resend, so it is resent under the same rules: the service answers a resend of a change that
 *   landed with that change's first answer, and applies nothing twice.
 * - Between tries: the server's Retry-After when it gave one, else a random pause of up to
 *   `backoffMs * 2^attempt` (full jitter), never more than 30 s.
 * - A refusal (4xx) is never resent: a stale write must reach the caller, who reads again and redoes it.
 */

import { randomUUID } from 'node:crypto';

import { MemoryApiError, MemoryConnectionError, retryableStatus } from './base.js';
import { ERRORS } from './gen/errors.js';
import { READ_ONLY_TOOLS, ROUTES, Routes, type CallArgs, type CallOptions, type RouteName } from './gen/routes.js';

export interface MemoryClientOptions {
  token?: string | null;
  /** Per try, in milliseconds (default 10000). */
  timeoutMs?: number;
  /** Resends after the first try, for calls safe to resend (default 2). */
  retries?: number;
  /** The backoff's base, in milliseconds (default 250). */
  backoffMs?: number;
  /** The deployment's operator key, for createAccount. */
  operatorKey?: string | null;
  userAgent?: string;
  /** The fetch to send with (default: the global one). */
  fetch?: typeof fetch;
}

const MAX_PAUSE_MS = 30_000;

function retryAfterSeconds(value: string | null): number | null {
  if (!value) return null;
  const n = Number(value);
  return Number.isFinite(n) ? Math.max(0, n) : null; // an HTTP date: rare enough to use our own backoff
}

/** The error for a refusal: by the body's code, else (a proxy's or gateway's own page) by status. */
export function errorFromResponse(status: number, raw: string, retryAfter: string | null = null): MemoryApiError {
  let code: string | null = null;
  let message = '';
  let details: Record<string, unknown> | null = null;
  try {
    const err = (JSON.parse(raw) as { error: { code: string; message?: unknown; details?: Record<string, unknown> } }).error;
    if (typeof err.code !== 'string') throw new TypeError('no code');
    code = err.code;
    message = String(err.message ?? '');
    details = err.details ?? null;
  } catch {
    code = null;
    message = raw.slice(0, 200).trim() || `HTTP ${status}`;
  }
  let cls: typeof MemoryApiError | undefined = code === null ? undefined : ERRORS[code];
  if (cls === undefined) {
    let fallback: string | undefined = ({ 401: 'not_authenticated', 429: 'rate_limited' } as Record<number, string>)[status];
    if (fallback === undefined && status >= 500) fallback = 'internal_error';
    cls = fallback !== undefined && code === null ? ERRORS[fallback] : MemoryApiError;
  }
  return new cls!(message, { code, status, details, retryAfter: retryAfterSeconds(retryAfter) });
}

function refusedBeforeSending(err: unknown): boolean {
  // A refused connection carried no request, so even a write certainly did not happen.
  const cause = (err as { cause?: { code?: string } } | null)?.cause;
  return cause?.code === 'ECONNREFUSED';
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class MemoryClient {
  readonly baseUrl: string;
  readonly token: string | null;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
  readonly operatorKey: string | null;
  readonly userAgent: string;
  /** Every route of the contract as a method (generated from the OpenAPI document). */
  readonly routes: Routes;
  private readonly fetchImpl: typeof fetch;

  constructor(baseUrl: string, options: MemoryClientOptions = {}) {
    const timeoutMs = options.timeoutMs ?? 10_000;
    if (!(timeoutMs > 0)) throw new RangeError('timeoutMs must be positive: a call without one can hang a runtime forever');
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.token = options.token ?? null;
    this.timeoutMs = timeoutMs;
    this.retries = Math.max(0, options.retries ?? 2);
    this.backoffMs = options.backoffMs ?? 250;
    this.operatorKey = options.operatorKey ?? null;
    this.userAgent = options.userAgent ?? 'agent-memory-client-ts';
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.routes = new Routes(this);
  }

  /** The same service and settings, acting as another principal. */
  withToken(token: string): MemoryClient {
    return new MemoryClient(this.baseUrl, {
      token,
      timeoutMs: this.timeoutMs,
      retries: this.retries,
      backoffMs: this.backoffMs,
      operatorKey: this.operatorKey,
      userAgent: this.userAgent,
      fetch: this.fetchImpl,
    });
  }

  /** Call a route by name: the decoded JSON answer (null for 204), an export's page, or the text. */
  async call(route: RouteName, args: CallArgs = {}, options: CallOptions = {}): Promise<unknown> {
    const spec = ROUTES[route];
    const params = args.params ?? {};
    const path = spec.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = params[name];
      if (value === undefined) throw new TypeError(`${route} needs the path parameter ${name}`);
      return encodeURIComponent(value);
    });
    const readOnly = options.readOnly ?? spec.safeToRetry;
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    let keyed = false;
    if (spec.mutation && !readOnly) {
      // Every mutation carries a key of its own, reused on this client's resends: the service then answers a
      // resend of a change that landed with that change's answer, so resending is safe.
      headers['Idempotency-Key'] = options.idempotencyKey ?? headers['Idempotency-Key'] ?? randomUUID();
      keyed = true;
    } else if (options.idempotencyKey) {
      headers['Idempotency-Key'] = options.idempotencyKey;
    }
    return this.request(spec.method, path, args.body, {
      query: args.query,
      headers,
      readOnly,
      keyed,
      media: spec.media,
      signal: options.signal,
    });
  }

  /** Send one request. Only read-only requests and keyed mutations are ever sent more than once. */
  async request(
    method: string,
    path: string,
    body: unknown,
    options: {
      query?: Record<string, string | number | undefined>;
      headers?: Record<string, string>;
      readOnly?: boolean;
      keyed?: boolean;
      media?: string;
      signal?: AbortSignal;
    } = {},
  ): Promise<unknown> {
    let url = this.baseUrl + path;
    const query = Object.entries(options.query ?? {}).filter(([, v]) => v !== undefined) as Array<[string, string | number]>;
    if (query.length) url += '?' + new URLSearchParams(query.map(([k, v]) => [k, String(v)])).toString();
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': this.userAgent, ...(options.headers ?? {}) };
    const data = body === undefined || body === null ? undefined : JSON.stringify(body);
    if (data !== undefined) headers['Content-Type'] = 'application/json';
    if (this.token) headers['Authorization'] = `Bearer ${this.token}`;
    const readOnly = options.readOnly ?? false;
    const attempts = 1 + (readOnly || options.keyed ? this.retries : 0);
    for (let attempt = 0; attempt < attempts; attempt++) {
      const last = attempt === attempts - 1;
      const timeout = AbortSignal.timeout(this.timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let status = 0;
      let raw = '';
      let wait: string | null = null;
      try {
        const resp = await this.fetchImpl(url, { method, headers, body: data, signal });
        status = resp.status;
        wait = resp.headers.get('Retry-After');
        if (resp.ok) {
          const text = await resp.text();
          if (options.media === 'application/x-ndjson') {
            // An export: one JSON object a line, and where the next page starts in a header.
            const lines = text.split('\n').filter((line) => line).map((line) => JSON.parse(line) as Record<string, unknown>);
            return { lines, nextCursor: resp.headers.get('Export-Next-Cursor') };
          }
          if (options.media && options.media !== 'application/json') return text;
          if (status === 204 || !text) return null;
          try {
            return JSON.parse(text);
          } catch {
            throw new MemoryApiError(`HTTP ${status} with a body that is not JSON`, { status });
          }
        }
        raw = await resp.text().catch(() => ''); // the status alone still names the refusal
      } catch (err) {
        if (err instanceof MemoryApiError || options.signal?.aborted) throw err;
        if (!last) {
          await this.pause(attempt, null);
          continue;
        }
        const reason = (err as { cause?: { message?: string } })?.cause?.message ?? (err as Error)?.message ?? String(err);
        throw new MemoryConnectionError(`${method} ${path}: ${reason}`, {
          mayHaveApplied: !readOnly && !refusedBeforeSending(err),
          cause: err,
        });
      }
      if (!last && retryableStatus(status)) {
        await this.pause(attempt, retryAfterSeconds(wait));
        continue;
      }
      throw errorFromResponse(status, raw, wait);
    }
    throw new Error('unreachable');
  }

  private async pause(attempt: number, askedSeconds: number | null): Promise<void> {
    // Full jitter keeps a crowd of runtimes from retrying in step; a server's Retry-After wins, capped.
    const ms = askedSeconds !== null ? askedSeconds * 1000 : Math.random() * this.backoffMs * 2 ** attempt;
    await sleep(Math.min(ms, MAX_PAUSE_MS));
  }

  // ---- a few helpers over the routes: each answers the route's body as the OpenAPI document describes it --

  /** A new account and its first Human ({account, human, token}). Needs the operator key. */
  createAccount(name: string, humanName: string, operatorKey?: string) {
    const key = operatorKey ?? this.operatorKey;
    if (!key) throw new TypeError("creating an account needs the deployment's operator key");
    return this.routes.createAccount(
      { body: { account: { name }, human: { name: humanName } } },
      { headers: { 'X-Operator-Key': key } },
    );
  }

  /** Run one model tool call in an execution. A read-only tool's call is resent like a GET. */
  callTool(executionPublicId: string, tool: string, input: Record<string, unknown>, options: CallOptions = {}) {
    return this.routes.callTool(
      { execution_public_id: executionPublicId, tool_name: tool, body: { input } },
      { readOnly: READ_ONLY_TOOLS.has(tool), ...options },
    );
  }
}
