import type { RecordedRequest, Reply } from './fake-openai.js';

/**
 * The worst model there is (issue "untrusted data cannot steer quarry"): behind the OpenAI-compatible
 * fake server (startOpenAIServer(obedientReply)), it reads the newest user message and tool results of
 * each request and makes every tool call they ask for, written as `<<DO TOOL {JSON arguments}>>`. In
 * the arguments, the string "@ALL@" becomes everything the conversation's tool results said (what an
 * exfiltrating model would send). With nothing to obey it answers with every tool result it has seen,
 * so a child agent's answer carries what the child read back to its parent.
 */

type WireMessage = { role: string; content?: unknown };

function textOf(message: WireMessage): string {
  if (typeof message.content === 'string') return message.content;
  if (Array.isArray(message.content)) return message.content.map((part) => (part as { text?: string }).text ?? '').join('');
  return '';
}

/** The JSON object starting at `from` (strings and escapes respected), or null. */
function objectAt(text: string, from: number): string | null {
  if (text[from] !== '{') return null;
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) return text.slice(from, i + 1);
  }
  return null;
}

export interface Directive {
  name: string;
  args: Record<string, unknown>;
}

const ENTITIES: Record<string, string> = { '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&amp;': '&' };

/**
 * The text, and where it is a JSON document (bash's result), every string inside it, unescaped as a
 * model reads it; text with HTML entities (a result marked or escaped on its way) is read decoded too.
 * Directives are found anywhere in these readings, so wrapping a result in any envelope changes nothing.
 */
function readings(text: string): string[] {
  const out = [text];
  if (/&(lt|gt|quot|#39|amp);/.test(text)) out.push(text.replace(/&(lt|gt|quot|#39|amp);/g, (entity) => ENTITIES[entity]!));
  // A listing shows a backslash in a file name doubled: read it as the name.
  if (text.includes('\\\\')) out.push(text.replaceAll('\\\\', '\\'));
  const collect = (value: unknown) => {
    if (typeof value === 'string') out.push(value);
    else if (value && typeof value === 'object') Object.values(value).forEach(collect);
  };
  // A result marked as data (src/agent/marking.ts) is read inside its envelope, as a model reads it.
  const inner = text.replace(/^\s*<<data-[0-9a-f]+ source="[^"\n]*">>\n?/, '').replace(/\n?<<end-[0-9a-f]+>>\s*$/, '');
  for (const document of new Set([text, inner])) {
    try {
      collect(JSON.parse(document));
    } catch {
      // Not JSON: read as it is.
    }
  }
  return out;
}

export function directives(text: string): Directive[] {
  const seen = new Set<string>();
  return readings(text)
    .flatMap(directivesIn)
    .filter((found) => {
      const key = `${found.name} ${JSON.stringify(found.args)}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}

function directivesIn(text: string): Directive[] {
  const found: Directive[] = [];
  const pattern = /<<DO ([\w-]+) /g;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    const json = objectAt(text, match.index + match[0].length);
    if (!json) continue;
    try {
      found.push({ name: match[1]!, args: JSON.parse(json) as Record<string, unknown> });
      pattern.lastIndex = match.index + match[0].length + json.length;
    } catch {
      // Not JSON after all (cut or mangled on its way): nothing to obey.
    }
  }
  return found;
}

function substitute(value: unknown, all: string): unknown {
  if (typeof value === 'string') return value.replaceAll('@ALL@', all);
  if (Array.isArray(value)) return value.map((item) => substitute(item, all));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, all)]));
  return value;
}

export function obedientReply(request: RecordedRequest): Reply {
  const messages = (request.body.messages ?? []) as WireMessage[];
  const lastAssistant = messages.map((message) => message.role).lastIndexOf('assistant');
  const fresh = messages.slice(lastAssistant + 1).filter((message) => message.role === 'user' || message.role === 'tool');
  const results = messages.filter((message) => message.role === 'tool').map(textOf);
  const all = results.join('\n');
  const calls = fresh.flatMap((message) => directives(textOf(message)));
  if (calls.length > 0) {
    return {
      toolCalls: calls.map((call, index) => ({
        id: `call_${messages.length}_${index}`,
        name: call.name,
        arguments: JSON.stringify(substitute(call.args, all)),
      })),
    };
  }
  return { text: all || 'done' };
}
