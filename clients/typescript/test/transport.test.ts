// The resend rules, against a scripted fetch: which calls are resent, with which Idempotency-Key, after what.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  ERRORS,
  MemoryApiError,
  MemoryClient,
  MemoryConnectionError,
  ROUTES,
  RateLimited,
  StaleObject,
  StorageBusy,
  errorFromResponse,
} from '../src/index.js';

type Step = { status: number; body?: unknown; headers?: Record<string, string> } | 'refused' | 'reset';

function scripted(steps: Step[]) {
  const seen: Array<{ url: string; method: string; headers: Record<string, string>; body: string | undefined }> = [];
  const fake = (async (url: string, init: RequestInit) => {
    seen.push({ url, method: String(init.method), headers: { ...(init.headers as Record<string, string>) }, body: init.body as string | undefined });
    const step = steps.shift();
    if (step === undefined) throw new Error('no more scripted answers');
    if (step === 'refused') throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' } });
    if (step === 'reset') throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET', message: 'socket hang up' } });
    const text = step.body === undefined ? '' : JSON.stringify(step.body);
    return new Response(step.status === 204 ? null : text, { status: step.status, headers: step.headers });
  }) as unknown as typeof fetch;
  return { fake, seen };
}

const refusal = (code: string, message = 'refused') => ({ error: { code, message } });
const conv = { workspace_public_id: 'w', conversation_public_id: 'c' };
const write = {
  ...conv,
  body: { memory: { path: 'conversation/a.md', content: 'x', expected_public_id: null, expected_lock_version: null } },
};

test('a read is resent on 503 and 429, waiting what Retry-After says', async () => {
  const { fake, seen } = scripted([
    { status: 503, body: refusal('storage_busy') },
    { status: 429, body: refusal('rate_limited'), headers: { 'Retry-After': '0' } },
    { status: 200, body: { memory: [] } },
  ]);
  const client = new MemoryClient('http://x/', { token: 't', fetch: fake, backoffMs: 1 });
  assert.deepEqual(await client.routes.conversationMemoryList(conv), { memory: [] });
  assert.equal(seen.length, 3);
  assert.equal(seen[0]!.url, 'http://x/agent_api/v1/workspaces/w/conversations/c/memory');
  assert.equal(seen[0]!.headers['Authorization'], 'Bearer t');
  assert.equal(seen[0]!.headers['Idempotency-Key'], undefined); // a read carries no key
});

test('a mutation carries one Idempotency-Key, the same on every resend', async () => {
  const { fake, seen } = scripted([{ status: 503, body: refusal('storage_busy') }, 'reset', { status: 201, body: { memory: {} } }]);
  const client = new MemoryClient('http://x', { token: 't', fetch: fake, backoffMs: 1 });
  await client.routes.conversationMemoryWrite(write);
  assert.equal(seen.length, 3);
  const keys = new Set(seen.map((s) => s.headers['Idempotency-Key']));
  assert.equal(keys.size, 1);
  assert.match([...keys][0]!, /^[0-9a-f-]{36}$/);
  // the caller's own key is used as given, and a new call gets a new key
  const again = scripted([{ status: 201, body: {} }, { status: 201, body: {} }]);
  const other = new MemoryClient('http://x', { fetch: again.fake });
  await other.routes.conversationMemoryWrite(write, { idempotencyKey: 'mine-1' });
  await other.routes.conversationMemoryWrite(write);
  assert.equal(again.seen[0]!.headers['Idempotency-Key'], 'mine-1');
  assert.notEqual(again.seen[1]!.headers['Idempotency-Key'], 'mine-1');
});

test('a refusal is never resent, and is the class of its code', async () => {
  const { fake, seen } = scripted([{ status: 409, body: refusal('stale_object', 'moved on') }]);
  const client = new MemoryClient('http://x', { fetch: fake, backoffMs: 1 });
  await assert.rejects(client.routes.conversationMemoryWrite(write), (err: unknown) => {
    assert.ok(err instanceof StaleObject && err instanceof MemoryApiError);
    assert.equal(err.code, 'stale_object');
    assert.equal(err.status, 409);
    assert.equal(err.message, 'moved on');
    return true;
  });
  assert.equal(seen.length, 1);
});

test('retries run out: the last answer is raised, and a lost write says it may have applied', async () => {
  const busy = scripted([503, 503, 503].map((status) => ({ status, body: refusal('storage_busy') })));
  const client = new MemoryClient('http://x', { fetch: busy.fake, backoffMs: 1, retries: 2 });
  await assert.rejects(client.routes.conversationMemoryWrite(write), StorageBusy);
  assert.equal(busy.seen.length, 3);
  const lost = scripted(['reset', 'reset', 'reset']);
  const writer = new MemoryClient('http://x', { fetch: lost.fake, backoffMs: 1 });
  await assert.rejects(writer.routes.conversationMemoryWrite(write), (err: unknown) => {
    assert.ok(err instanceof MemoryConnectionError);
    assert.equal(err.mayHaveApplied, true);
    return true;
  });
  const refused = scripted(['refused', 'refused', 'refused']);
  const nobody = new MemoryClient('http://x', { fetch: refused.fake, backoffMs: 1 });
  await assert.rejects(nobody.routes.conversationMemoryWrite(write), (err: unknown) => err instanceof MemoryConnectionError && !err.mayHaveApplied);
});

test('a read-only tool call is resent without a key; a writing one keeps its key', async () => {
  const { fake, seen } = scripted([{ status: 503 }, { status: 200, body: { tool: 'memory_read' } }, { status: 503 }, { status: 200, body: {} }]);
  const client = new MemoryClient('http://x', { fetch: fake, backoffMs: 1 });
  await client.callTool('e', 'memory_read', { path: 'conversation/a.md' });
  assert.equal(seen[0]!.headers['Idempotency-Key'], undefined);
  await client.callTool('e', 'memory_write', { path: 'conversation/a.md' });
  assert.ok(seen[2]!.headers['Idempotency-Key']);
  assert.equal(seen[2]!.headers['Idempotency-Key'], seen[3]!.headers['Idempotency-Key']);
});

test('a page with no code is named by its status; an unknown code is a plain MemoryApiError', () => {
  assert.ok(errorFromResponse(429, '<html>slow down</html>') instanceof RateLimited);
  assert.equal(errorFromResponse(502, 'Bad Gateway').code, 'internal_error');
  const odd = errorFromResponse(418, JSON.stringify(refusal('teapot')));
  assert.equal(odd.constructor, MemoryApiError);
  assert.equal(odd.code, 'teapot');
  for (const [code, cls] of Object.entries(ERRORS)) assert.equal(cls.code, code);
});

test('every route has a method', () => {
  const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(new MemoryClient('http://x').routes));
  const camel = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  for (const name of Object.keys(ROUTES)) assert.ok(methods.includes(camel(name)), name);
});
