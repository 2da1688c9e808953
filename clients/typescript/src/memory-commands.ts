/**
 * Claude's memory tool (`memory_20250818`) over one execution's file tree: the six commands, their texts as
 * the SDK's reference implementation (BetaLocalFilesystemMemoryTool) words them, each change a conditional
 * write on the pair read in the same command. The mapping is the Python integration's
 * (agent_memory_sdk/integrations/memory_commands.py):
 *
 * - `/memories` lists the execution's roots (`conversation/`, `workspace/`, ...) and the folders its Memory
 *   mounts lie in;
 * - `/memories/<root>/<rest>` is the root's document `<root>/<rest>`;
 * - `/memories/<mount path>/<rest>` is a mounted Memory's file (`/memories/workspace/runbooks/a.md` is
 *   `/workspace/runbooks/a.md`); a mount hides the root's documents under the same folder.
 *
 * A refusal is thrown as a MemoryToolError whose message is the text the model reads; a refusal of the call
 * itself (a bad token, a stopped execution) is thrown as the client's own error, for the program to handle.
 */

import { MemoryApiError, MemoryConnectionError } from './base.js';
import type { MemoryClient } from './client.js';
import { CALL_REFUSALS } from './gen/errors.js';
import type * as Schemas from './gen/schemas.js';

export const PREFIX = '/memories';
const LINE_NUMBER_WIDTH = 6;
const MAX_LINES = 999_999;

/** A command's refusal, as the text the model reads. */
export class MemoryToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MemoryToolError';
  }
}

export interface ViewCommand { command: 'view'; path: string; view_range?: number[] }
export interface CreateCommand { command: 'create'; path: string; file_text: string }
export interface StrReplaceCommand { command: 'str_replace'; path: string; old_str: string; new_str: string }
export interface InsertCommand { command: 'insert'; path: string; insert_line: number; insert_text: string }
export interface DeleteCommand { command: 'delete'; path: string }
export interface RenameCommand { command: 'rename'; old_path: string; new_path: string }
export type MemoryCommand = ViewCommand | CreateCommand | StrReplaceCommand | InsertCommand | DeleteCommand | RenameCommand;

type Pair = { expected_public_id: string | null; expected_lock_version: number | null };
const NEW: Pair = { expected_public_id: null, expected_lock_version: null };

/** A size as the reference prints it: 0B, 512B, 1.5K, 2M. */
export function formatSize(n: number): string {
  if (n === 0) return '0B';
  const sizes = ['B', 'K', 'M', 'G'];
  const i = Math.min(Math.floor(Math.log2(n) / 10), sizes.length - 1);
  const size = n / 1024 ** i;
  return Number.isInteger(size) ? `${size}${sizes[i]}` : `${size.toFixed(1)}${sizes[i]}`;
}

function numbered(lines: string[], first: number): string {
  return lines.map((line, i) => `${String(i + first).padStart(LINE_NUMBER_WIDTH)}\t${line}`).join('\n');
}

function splitLines(content: string): string[] {
  const lines = content.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function pairOf(f: { public_id: string; lock_version: number }): Pair {
  return { expected_public_id: f.public_id, expected_lock_version: f.lock_version };
}

/** The six commands against one execution's session files. Mounts and roots are frozen for an execution's life. */
export class MemoryCommands {
  private mountModes: Map<string, string> | null = null;
  private rootAccess: Map<string, string> | null = null;

  constructor(
    readonly client: MemoryClient,
    readonly executionPublicId: string,
  ) {}

  async run(command: MemoryCommand): Promise<string> {
    switch (command.command) {
      case 'view':
        return this.view(command.path, command.view_range);
      case 'create':
        return this.create(command.path, command.file_text);
      case 'str_replace':
        return this.strReplace(command.path, command.old_str, command.new_str);
      case 'insert':
        return this.insert(command.path, command.insert_line, command.insert_text);
      case 'delete':
        return this.delete(command.path);
      case 'rename':
        return this.rename(command.old_path, command.new_path);
      default:
        throw new MemoryToolError(`Unknown command ${JSON.stringify((command as { command: unknown }).command)}`);
    }
  }

  // ---- the service ----

  private get ex(): { execution_public_id: string } {
    return { execution_public_id: this.executionPublicId };
  }

  private async service<T>(call: () => Promise<T>, path: string): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw this.refusal(err, path);
    }
  }

  private refusal(err: unknown, path: string): unknown {
    if (err instanceof MemoryConnectionError) {
      const applied = err.mayHaveApplied ? ' It may have been applied: view the path before trying again.' : '';
      return new MemoryToolError(`The memory service did not answer: ${err.message}.${applied}`);
    }
    if (!(err instanceof MemoryApiError) || CALL_REFUSALS.has(err.code)) return err;
    switch (err.code) {
      case 'memory_not_found':
        return new MemoryToolError(`The path ${path} does not exist. Please provide a valid path.`);
      case 'memory_scope_unavailable':
        return new MemoryToolError(`The path ${path} does not exist. Please provide a valid path. (${err.message})`);
      case 'memory_read_only':
        return new MemoryToolError(`The path ${path} is read-only in this session: it cannot be changed.`);
      case 'memory_path_invalid':
        return new MemoryToolError(`Invalid path ${path}: ${err.message}`);
      case 'memory_quarantined':
        return new MemoryToolError(`The file ${path} is waiting for a person's review and cannot be read or changed: carry on without it.`);
      default:
        return new MemoryToolError(`${err.message} (${err.code})`);
    }
  }

  private async mounts(): Promise<Map<string, string>> {
    if (this.mountModes === null) {
      const answer = await this.service(() => this.client.routes.executionMounts(this.ex), PREFIX);
      this.mountModes = new Map(answer.mounts.filter((m) => m.kind === 'memory').map((m) => [String(m.path), String(m.mode)]));
    }
    return this.mountModes;
  }

  private async mountOf(absolute: string): Promise<string | null> {
    const held = [...(await this.mounts()).keys()].filter((m) => absolute === m || absolute.startsWith(m + '/'));
    return held.length ? held.reduce((a, b) => (b.length > a.length ? b : a)) : null;
  }

  /** The session path a tool path names (null: `/memories` itself). */
  async servicePath(path: string): Promise<string | null> {
    if (typeof path !== 'string' || !(path === PREFIX || path.startsWith(PREFIX + '/'))) {
      throw new MemoryToolError(`Path must start with /memories, got: ${path}`);
    }
    const rel = path.slice(PREFIX.length).replace(/^\/+|\/+$/g, '');
    if (rel.split('/').some((seg) => seg === '.' || seg === '..')) {
      throw new MemoryToolError(`Path ${path} would escape /memories directory`);
    }
    if (!rel) return null;
    return (await this.mountOf('/' + rel)) !== null ? '/' + rel : rel;
  }

  private async isFolder(sp: string): Promise<boolean> {
    const trimmed = sp.replace(/^\/+|\/+$/g, '');
    if (!trimmed.includes('/')) return true;
    const at = '/' + trimmed;
    return [...(await this.mounts()).keys()].some((m) => m === at || m.startsWith(at + '/'));
  }

  private async file(path: string): Promise<string> {
    const sp = await this.servicePath(path);
    if (sp === null || (await this.isFolder(sp))) throw new MemoryToolError(`The path ${path} is not a file.`);
    return sp;
  }

  private async show(sp: string, path: string): Promise<Schemas.FileAnswer['file'] | null> {
    let f: Schemas.FileAnswer['file'];
    try {
      f = (await this.client.routes.executionFileShow({ ...this.ex, body: { file: { path: sp } } })).file;
    } catch (err) {
      if (err instanceof MemoryApiError && (err.code === 'memory_not_found' || err.code === 'memory_path_invalid')) return null;
      throw this.refusal(err, path);
    }
    const q = (f as { quarantine?: { status?: string } | null }).quarantine;
    if (q && q.status !== 'released') {
      throw new MemoryToolError(`The file ${path} is waiting for a person's review and cannot be read or changed: carry on without it.`);
    }
    return f;
  }

  private async existing(sp: string, path: string): Promise<Schemas.FileAnswer['file']> {
    const f = await this.show(sp, path);
    if (f === null) throw new MemoryToolError(`The path ${path} does not exist. Please provide a valid path.`);
    return f;
  }

  private async listed(sp: string | null): Promise<Array<[string, number]>> {
    let answer: Schemas.SessionFileList;
    try {
      answer = await this.client.routes.executionFilesList({ ...this.ex, body: { file: { path: sp ?? '' } } });
    } catch (err) {
      if (err instanceof MemoryApiError && (err.code === 'memory_scope_unavailable' || err.code === 'memory_path_invalid')) return [];
      throw this.refusal(err, sp === null ? PREFIX : `${PREFIX}/${sp.replace(/^\/+/, '')}`);
    }
    if (sp === null) this.rootAccess = new Map((answer.roots ?? []).map((r) => [String(r.root).replace(/\/+$/, ''), String(r.access)]));
    let rows: Array<[string, number]> = answer.files.map((f) => [String(f.path), Number(f.bytesize)]);
    if (sp !== null) rows = rows.filter(([p]) => p.startsWith(sp.replace(/\/+$/, '') + '/'));
    if (!(sp ?? '').startsWith('/')) {
      const kept: Array<[string, number]> = [];
      for (const row of rows) if ((await this.mountOf('/' + row[0])) === null) kept.push(row);
      rows = kept;
    }
    return rows;
  }

  private async roots(): Promise<string[]> {
    if (this.rootAccess === null) await this.listed(null);
    return [...(this.rootAccess ?? new Map()).keys()];
  }

  // ---- the commands ----

  async view(path: string, viewRange?: number[]): Promise<string> {
    const sp = await this.servicePath(path);
    const shown = path.replace(/\/+$/, '') || PREFIX;
    if (sp !== null && !(await this.isFolder(sp))) {
      const f = await this.show(sp, shown);
      if (f !== null) {
        let lines = String(f.content ?? '').split('\n');
        if (lines.length > MAX_LINES) throw new MemoryToolError(`File ${shown} exceeds maximum line limit of 999,999 lines.`);
        let first = 1;
        if (viewRange && viewRange.length === 2) {
          const start = Math.max(1, viewRange[0]!) - 1;
          const end = viewRange[1] === -1 ? lines.length : viewRange[1]!;
          lines = lines.slice(start, end);
          first = start + 1;
        }
        return `Here's the content of ${shown} with line numbers:\n` + numbered(lines, first);
      }
    }
    return this.folder(shown, sp);
  }

  private async folder(shown: string, sp: string | null): Promise<string> {
    const rows = await this.listed(sp);
    const base = sp === null ? '' : sp.replace(/^\/+|\/+$/g, '');
    const files = new Map<string, number>();
    for (const [p, n] of rows) {
      const trimmed = p.replace(/^\/+|\/+$/g, '');
      files.set(base ? trimmed.slice(base.length).replace(/^\/+/, '') : trimmed, n);
    }
    const folders = new Set<string>(sp === null ? await this.roots() : []);
    for (const m of (await this.mounts()).keys()) {
      const inner = m.replace(/^\/+|\/+$/g, '');
      if (!base) folders.add(inner);
      else if (inner.startsWith(base + '/')) folders.add(inner.slice(base.length + 1));
    }
    let exists = sp === null || files.size > 0 || folders.size > 0 || base === ((await this.mountOf('/' + base)) ?? '').replace(/^\/+|\/+$/g, '');
    if (sp !== null && !sp.includes('/') && (await this.roots()).includes(sp)) exists = true;
    if (!exists) throw new MemoryToolError(`The path ${shown} does not exist. Please provide a valid path.`);
    return renderFolder(shown, files, folders);
  }

  async create(path: string, fileText: string): Promise<string> {
    const sp = await this.file(path);
    try {
      await this.client.routes.executionFileWrite({ ...this.ex, body: { file: { path: sp, content: fileText, ...NEW } } });
    } catch (err) {
      // As the reference: create makes a new file and never replaces one (str_replace and insert change one).
      if (err instanceof MemoryApiError && err.code === 'stale_object') throw new MemoryToolError(`File ${path} already exists`);
      throw this.refusal(err, path);
    }
    return `File created successfully at: ${path}`;
  }

  async strReplace(path: string, oldStr: string, newStr: string): Promise<string> {
    const sp = await this.file(path);
    for (let attempt = 0; attempt < 2; attempt++) {
      const f = await this.existing(sp, path);
      const content = String(f.content ?? '');
      let edited: Schemas.FileAnswer['file'];
      try {
        edited = (await this.client.routes.executionFileEdit({ ...this.ex, body: { file: { path: sp, old_text: oldStr, new_text: newStr, ...pairOf(f) } } })).file;
      } catch (err) {
        if (err instanceof MemoryApiError && err.code === 'stale_object') {
          if (attempt) throw new MemoryToolError(`The file ${path} kept changing while it was being edited: nothing was changed. View it and try again.`);
          continue; // changed since the read: the edit is judged again against the current text
        }
        if (err instanceof MemoryApiError && err.code === 'memory_edit_not_found') {
          throw new MemoryToolError(`No replacement was performed, old_str \`${oldStr}\` did not appear verbatim in ${path}.`);
        }
        if (err instanceof MemoryApiError && err.code === 'memory_edit_ambiguous') {
          const lines: number[] = [];
          for (let at = content.indexOf(oldStr); at !== -1; at = content.indexOf(oldStr, at + 1)) {
            lines.push(content.slice(0, at).split('\n').length);
          }
          throw new MemoryToolError(`No replacement was performed. Multiple occurrences of old_str \`${oldStr}\` in lines: ${lines.join(', ')}. Please ensure it is unique`);
        }
        throw this.refusal(err, path);
      }
      const changed = content.slice(0, Math.max(content.indexOf(oldStr), 0)).split('\n').length - 1;
      const newLines = String(edited.content ?? '').split('\n');
      const low = Math.max(0, changed - 2);
      const high = Math.min(newLines.length, changed + 3);
      const snippet: string[] = [];
      for (let n = low + 1; n <= high; n++) snippet.push(`${String(n).padStart(LINE_NUMBER_WIDTH)}\t${newLines[n - 1]}`);
      return 'The memory file has been edited. Here is the snippet showing the change (with line numbers):\n' + snippet.join('\n');
    }
    throw new Error('unreachable');
  }

  async insert(path: string, insertLine: number, insertText: string): Promise<string> {
    const sp = await this.file(path);
    const f = await this.existing(sp, path);
    const lines = splitLines(String(f.content ?? ''));
    if (!Number.isInteger(insertLine) || insertLine < 0 || insertLine > lines.length) {
      throw new MemoryToolError(`Invalid \`insert_line\` parameter: ${insertLine}. It should be within the range [0, ${lines.length}].`);
    }
    lines.splice(insertLine, 0, insertText.replace(/\n+$/, ''));
    let text = lines.join('\n');
    if (!text.endsWith('\n')) text += '\n';
    try {
      await this.client.routes.executionFileWrite({ ...this.ex, body: { file: { path: sp, content: text, ...pairOf(f) } } });
    } catch (err) {
      if (err instanceof MemoryApiError && err.code === 'stale_object') {
        throw new MemoryToolError(`The file ${path} changed while the text was being inserted: nothing was changed. View it again and retry.`);
      }
      throw this.refusal(err, path);
    }
    return `The file ${path} has been edited.`;
  }

  async delete(path: string): Promise<string> {
    const sp = await this.servicePath(path);
    if (sp === null) throw new MemoryToolError('Cannot delete the /memories directory itself');
    if (!(await this.isFolder(sp))) {
      for (let attempt = 0; attempt < 2; attempt++) {
        const f = await this.show(sp, path);
        if (f === null) break;
        try {
          await this.client.routes.executionFileDelete({ ...this.ex, body: { file: { path: sp, ...pairOf(f) } } });
        } catch (err) {
          if (err instanceof MemoryApiError && err.code === 'stale_object') {
            if (attempt) throw new MemoryToolError(`The file ${path} kept changing: nothing was deleted.`);
            continue;
          }
          throw this.refusal(err, path);
        }
        return `Successfully deleted ${path}`;
      }
    }
    // A folder: each file under it, on the pair it shows (not one transaction).
    const rows = await this.listed(sp);
    if (!rows.length) throw new MemoryToolError(`The path ${path} does not exist`);
    for (const [filePath] of rows) {
      const f = await this.show(filePath, path);
      if (f !== null) await this.service(() => this.client.routes.executionFileDelete({ ...this.ex, body: { file: { path: filePath, ...pairOf(f) } } }), path);
    }
    return `Successfully deleted ${path}`;
  }

  async rename(oldPath: string, newPath: string): Promise<string> {
    const so = await this.servicePath(oldPath);
    const sn = await this.servicePath(newPath);
    if (so === null) throw new MemoryToolError('Cannot rename the /memories directory itself');
    if (sn === null || (await this.isFolder(sn))) throw new MemoryToolError(`The destination ${newPath} already exists`);
    for (let attempt = 0; attempt < 2; attempt++) {
      const f = (await this.isFolder(so)) ? null : await this.show(so, oldPath);
      if (f === null) {
        if ((await this.listed(so)).length) {
          throw new MemoryToolError(`The path ${oldPath} is a directory: a rename here moves one file in one transaction, so rename the files inside it one at a time.`);
        }
        throw new MemoryToolError(`The path ${oldPath} does not exist`);
      }
      try {
        await this.client.routes.executionFileRename({ ...this.ex, body: { file: { path: so, new_path: sn, ...pairOf(f) } } });
      } catch (err) {
        if (err instanceof MemoryApiError && err.code === 'already_exists') throw new MemoryToolError(`The destination ${newPath} already exists`);
        if (err instanceof MemoryApiError && err.code === 'stale_object') {
          if (attempt) throw new MemoryToolError(`The file ${oldPath} kept changing: nothing was renamed.`);
          continue;
        }
        throw this.refusal(err, newPath);
      }
      return `Successfully renamed ${oldPath} to ${newPath}`;
    }
    throw new Error('unreachable');
  }
}

/** A folder two levels deep, in the reference's format: sizes and paths, depth first, by name, no hidden items. */
export function renderFolder(shown: string, files: Map<string, number>, folders: Set<string>): string {
  const sizes = new Map<string, number>();
  const isFolder = new Map<string, boolean>();
  for (const [rel, n] of files) {
    const parts = rel.split('/');
    for (let depth = 1; depth < parts.length; depth++) {
      const d = parts.slice(0, depth).join('/');
      sizes.set(d, (sizes.get(d) ?? 0) + n);
      isFolder.set(d, true);
    }
    if (!isFolder.has(rel)) isFolder.set(rel, false);
    sizes.set(rel, isFolder.get(rel) ? sizes.get(rel) ?? 0 : n);
  }
  for (const folder of folders) {
    const parts = folder.split('/');
    for (let depth = 1; depth <= parts.length; depth++) {
      const d = parts.slice(0, depth).join('/');
      isFolder.set(d, true);
      if (!sizes.has(d)) sizes.set(d, 0);
    }
  }
  let total = 0;
  for (const n of files.values()) total += n;
  const out = [`${formatSize(total)}\t${shown}`];
  const walk = (prefix: string, depth: number): void => {
    const children = [...isFolder.keys()]
      .filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/') && p !== prefix.replace(/\/$/, ''))
      .sort();
    for (const child of children) {
      const name = child.slice(prefix.length);
      if (!name || name.startsWith('.')) continue;
      const folder = isFolder.get(child)!;
      out.push(`${formatSize(sizes.get(child) ?? 0)}\t${shown}/${child}${folder ? '/' : ''}`);
      if (folder && depth < 2) walk(child + '/', depth + 1);
    }
  };
  walk('', 1);
  return `Here're the files and directories up to 2 levels deep in ${shown}, excluding hidden items:\n` + out.join('\n');
}
