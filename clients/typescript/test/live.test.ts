// Against a real local server: AGENT_MEMORY_URL and AGENT_MEMORY_TOKEN (a Human's) name it; without them
// these tests are skipped (tests/clients/test_typescript.py runs them with a fresh server).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MemoryClient, MemoryReadOnly, NotAuthenticated, StaleObject } from '../src/index.js';
import { memoryTool, memoryToolHandlers } from '../src/anthropic.js';

const url = process.env.AGENT_MEMORY_URL;
const token = process.env.AGENT_MEMORY_TOKEN;
const skip = !url || !token ? 'set AGENT_MEMORY_URL and AGENT_MEMORY_TOKEN to run against a server' : false;

async function room(client: MemoryClient) {
  const ws = (await client.routes.createWorkspace({ body: { workspace: { name: 'ts-room' } } })).workspace.public_id;
  const created = await client.routes.createAgent({ body: { agent: { name: `helper-${Date.now()}` } } });
  const agentId = created.agent.public_id;
  // An agent must be a member of the workspace before it can start an execution there.
  await client.routes.addMember({ workspace_public_id: ws, body: { member: { agent_public_id: agentId } } });
  const conv = await client.routes.createConversation({
    workspace_public_id: ws,
    body: { conversation: { answering_agent_public_id: agentId } },
  });
  return { ws, conv: conv.conversation.public_id, agentId, agent: client.withToken(String(created.token)) };
}

test('documents: a conditional write, a stale one refused by class, a replayed key', { skip }, async () => {
  const client = new MemoryClient(url!, { token: token! });
  const { ws, conv } = await room(client);
  const at = { workspace_public_id: ws, conversation_public_id: conv };
  const body = { memory: { path: 'conversation/plan.md', content: '# Plan', expected_public_id: null, expected_lock_version: null } };
  const key = `ts-plan-${Date.now()}`;
  const first = await client.routes.conversationMemoryWrite({ ...at, body }, { idempotencyKey: key });
  assert.equal(first.memory.path, 'conversation/plan.md');
  // the same key again answers the first answer; a new key is a new write, refused as stale
  const replay = await client.routes.conversationMemoryWrite({ ...at, body }, { idempotencyKey: key });
  assert.deepEqual(replay, first);
  await assert.rejects(client.routes.conversationMemoryWrite({ ...at, body }), StaleObject);
  const shown = await client.routes.conversationMemoryShow({ ...at, body: { memory: { path: 'conversation/plan.md' } } });
  assert.equal(shown.memory.content, '# Plan');
  const versions = await client.routes.conversationMemoryVersions({ ...at, body: { memory: { path: 'conversation/plan.md' } } });
  assert.equal(versions.versions.length, 1);
  await assert.rejects(new MemoryClient(url!, { token: 'am_h_nobody_nothing' }).routes.memoryMap(), NotAuthenticated);
});

test("the SDK's memory tool over an execution's roots and a read-write mount", { skip }, async () => {
  const client = new MemoryClient(url!, { token: token! });
  const { ws, conv, agentId, agent } = await room(client);
  const memory = await client.routes.createMemory({
    body: { memory: { name: `runbooks-${Date.now()}`, description: 'How we deploy.', files: [{ path: 'deploy.md', content: 'step one\n' }] } },
  });
  const memoryId = memory.memory.memory_id;
  const reference = await client.routes.createMemory({ body: { memory: { name: `reference-${Date.now()}`, description: 'Terms.' } } });
  const referenceId = reference.memory.memory_id;
  // An agent reaches a Memory through its attachments: attached read-write, it may mount it read-write.
  await client.routes.updateAgent({
    agent_public_id: agentId,
    body: { agent: { memories: [{ memory_id: memoryId, mode: 'readwrite' }, { memory_id: referenceId, mode: 'readonly' }] } },
  });
  const ex = await agent.routes.createExecution({
    workspace_public_id: ws,
    conversation_public_id: conv,
    body: { execution: { capabilities: [{ ref: 'memory', config: { mounts: [{ memory: memoryId, path: '/workspace/runbooks', mode: 'readwrite' }, { memory: referenceId, path: '/workspace/reference' }] } }] } },
  });
  const tool = memoryTool(agent, ex.execution.public_id);
  assert.equal(tool.type, 'memory_20250818');
  assert.equal(tool.name, 'memory');
  const h = memoryToolHandlers(agent, ex.execution.public_id);

  const top = String(await h.view({ command: 'view', path: '/memories' }));
  assert.match(top, /^Here're the files and directories up to 2 levels deep in \/memories, excluding hidden items:/);
  assert.match(top, /\/memories\/conversation\//);
  assert.match(top, /\/memories\/workspace\/runbooks\//);

  assert.equal(await h.create({ command: 'create', path: '/memories/conversation/notes.md', file_text: 'alpha\nbeta\n' }), 'File created successfully at: /memories/conversation/notes.md');
  await assert.rejects(async () => h.create({ command: 'create', path: '/memories/conversation/notes.md', file_text: 'other' }), /File \/memories\/conversation\/notes\.md already exists/);
  assert.match(String(await h.str_replace({ command: 'str_replace', path: '/memories/conversation/notes.md', old_str: 'beta', new_str: 'gamma' })), /The memory file has been edited[\s\S]*2\tgamma/);
  await assert.rejects(async () => h.str_replace({ command: 'str_replace', path: '/memories/conversation/notes.md', old_str: 'zeta', new_str: 'x' }), /did not appear verbatim/);
  assert.equal(await h.insert({ command: 'insert', path: '/memories/conversation/notes.md', insert_line: 0, insert_text: 'top' }), 'The file /memories/conversation/notes.md has been edited.');
  assert.equal(await h.view({ command: 'view', path: '/memories/conversation/notes.md' }), "Here's the content of /memories/conversation/notes.md with line numbers:\n     1\ttop\n     2\talpha\n     3\tgamma\n     4\t");
  assert.equal(await h.rename({ command: 'rename', old_path: '/memories/conversation/notes.md', new_path: '/memories/conversation/kept.md' }), 'Successfully renamed /memories/conversation/notes.md to /memories/conversation/kept.md');
  assert.equal(await h.delete({ command: 'delete', path: '/memories/conversation/kept.md' }), 'Successfully deleted /memories/conversation/kept.md');
  await assert.rejects(async () => h.view({ command: 'view', path: '/memories/conversation/kept.md' }), /does not exist/);

  // the mounted Memory's file, written through the tool, is the Memory's own
  await h.str_replace({ command: 'str_replace', path: '/memories/workspace/runbooks/deploy.md', old_str: 'one', new_str: 'two' });
  const file = await client.routes.memoryFileShow({ memory_id: memoryId, body: { file: { path: 'deploy.md' } } });
  assert.equal(file.file.content, 'step two\n');
  // a read-only mount refuses a change, saying so once
  await assert.rejects(
    async () => h.create({ command: 'create', path: '/memories/workspace/reference/terms.md', file_text: 'SLO' }),
    (err: Error) => err.message === 'The path /memories/workspace/reference/terms.md is read-only in this session: it cannot be changed.',
  );
  // and escaping /memories is refused before anything is sent
  await assert.rejects(async () => h.view({ command: 'view', path: '/memories/../etc' }), /would escape \/memories/);
  assert.ok(MemoryReadOnly.status === 403);
});
