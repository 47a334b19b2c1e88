import { resolve } from 'node:path';
import { canonicalJson } from '../agent/loop.js';
import type { Session, SessionSetupRecord, StoredDatabases, StoredProfile } from '../agent/session.js';
import type { Workspace } from '../agent/workspace.js';
import { findTemplateFile } from '../agent/prompts.js';
import { resolveProfile } from '../profiles/load.js';
import { ProfileError } from '../errors.js';
import type { Profile } from '../profiles/schema.js';
import { describeDatabase, parseDbFlag, redactUrl } from '../config/databases.js';
import { UsageError } from '../errors.js';
import type { RunCommandOptions } from './run.js';

/**
 * What a run is set up from, for a new session (the flags) and for `--resume` (what the session
 * recorded, so `quarry --resume latest "next question"` needs no flags):
 * - profile: the session's own, loaded again from where it came from (built-in name or file) and
 *   required to be exactly what the session ran under; otherwise the resume is refused, unless
 *   `--profile` names the profile to continue under (an explicit switch, noted and recorded).
 * - model: `--model`/`--base-url` if given, else the session's.
 * - databases: `--db`/`--databases`/`--config` if any is given, else the session's sources read
 *   again (the same flags, file and environment; passwords are never stored), and every database
 *   the session used must still point at the same target.
 * - system prompt: `--system-prompt`/`--var`/`--vars-file` if any is given, else the session's.
 */
export interface RunPlan {
  profile: Profile;
  profileRef: string;
  model: { model?: string; baseUrl?: string };
  databases: { dbFlags: string[]; databasesFile?: string };
  configFile?: string;
  /** The system prompt template and its variables. */
  prompt: { systemPrompt?: string; varsFile?: string; vars: string[] };
  /** Stored targets to check once the databases are loaded (resume without database flags). */
  expectTargets?: StoredDatabases['targets'];
  /** A line for stderr (a profile switched by --profile on resume). */
  note?: string;
}

function profileContent(profile: Profile): StoredProfile {
  const { source: _source, ...content } = profile;
  return content;
}

/**
 * Profile keys added after sessions began storing profiles. A session saved before a key existed
 * ran without it; the key's default only ever adds a check (the database query guard, the
 * profile time budget), so its absence there is no difference that could loosen the session.
 */
const KEYS_ADDED_LATER: ReadonlySet<string> = new Set(['query_guard', 'profile_budget_seconds', 'ask_user_budget']);

/** "database: readonly -> mutations" for each setting that differs. */
export function profileDifferences(stored: StoredProfile, now: StoredProfile): string[] {
  const keys = [...new Set([...Object.keys(stored), ...Object.keys(now)])].sort().filter((key) => key in stored || !KEYS_ADDED_LATER.has(key));
  return keys.flatMap((key) => {
    const before = canonicalJson((stored as unknown as Record<string, unknown>)[key] ?? null);
    const after = canonicalJson((now as unknown as Record<string, unknown>)[key] ?? null);
    return before === after ? [] : [`${key}: ${before} -> ${after}`];
  });
}

function planProfile(options: RunCommandOptions, resumed: Session | undefined, cwd: string): Pick<RunPlan, 'profile' | 'profileRef' | 'note'> {
  if (!resumed || options.profileGiven) {
    const { profile, ref } = resolveProfile(options.profile, cwd);
    const stored = resumed?.info.profile_content;
    const switched = resumed && (!stored || profileDifferences(stored, profileContent(profile)).length > 0);
    const note = switched
      ? `quarry: session ${resumed.id} ran under profile ${resumed.info.profile} (${resumed.info.profile_source ?? 'source not recorded'}); continuing it ` +
        `under profile ${profile.name} (${profile.source}) as --profile asks`
      : undefined;
    return { profile, profileRef: ref, ...(note ? { note } : {}) };
  }
  const meta = resumed.info;
  const how = 'restore it, or pass --profile NAME|PATH to continue the session under a profile you choose';
  if (!meta.profile_content || !meta.profile_ref) {
    throw new UsageError(
      `session ${resumed.id} was saved without its profile's settings (only the name "${meta.profile}"), so quarry cannot tell which profile it ran under; ` +
        `pass --profile NAME|PATH to choose the profile to continue it under`,
    );
  }
  let loaded: { profile: Profile; ref: string };
  try {
    loaded = resolveProfile(meta.profile_ref, cwd);
  } catch (error) {
    if (!(error instanceof ProfileError)) throw error;
    throw new UsageError(
      `session ${resumed.id} ran under profile ${meta.profile} from ${meta.profile_source ?? meta.profile_ref}, which cannot be loaded now ` +
        `(${error.message}); ${how}`,
    );
  }
  const differences = profileDifferences(meta.profile_content, profileContent(loaded.profile));
  if (differences.length > 0) {
    throw new UsageError(
      `session ${resumed.id} ran under profile ${meta.profile} from ${meta.profile_source ?? meta.profile_ref}, which has changed since ` +
        `(${differences.join('; ')}); ${how}`,
    );
  }
  return { profile: loaded.profile, profileRef: loaded.ref };
}

function planDatabases(options: RunCommandOptions, resumed: Session | undefined): Pick<RunPlan, 'databases' | 'configFile' | 'expectTargets'> {
  const explicit = options.db.length > 0 || options.databases !== undefined || options.configFile !== undefined;
  const stored = resumed?.info.databases;
  if (!stored || explicit) {
    return {
      databases: { dbFlags: options.db, ...(options.databases ? { databasesFile: options.databases } : {}) },
      ...(options.configFile ? { configFile: options.configFile } : {}),
    };
  }
  const withPassword = stored.db_flags.filter((entry) => entry.password_removed);
  if (withPassword.length > 0) {
    throw new UsageError(
      `session ${resumed.id} used ${withPassword.map((entry) => `--db ${entry.flag}`).join(', ')}, whose password quarry does not keep; give the --db flags ` +
        `again with the resume (or keep the password in a --databases file as \${VARIABLE}, or in POSTGRES_PASSWORD / MYSQL_PASSWORD ...)`,
    );
  }
  return {
    databases: { dbFlags: stored.db_flags.map((entry) => entry.flag), ...(stored.databases_file ? { databasesFile: stored.databases_file } : {}) },
    ...(stored.config_file ? { configFile: stored.config_file } : {}),
    expectTargets: stored.targets,
  };
}

export function planRun(options: RunCommandOptions, resumed: Session | undefined, cwd: string): RunPlan {
  const spec = resumed?.info.model_spec;
  const model = options.model ?? spec?.model;
  const baseUrl = options.baseUrl ?? (options.model === undefined ? spec?.base_url : undefined);
  const stored = resumed?.info.prompt;
  const promptGiven = options.systemPrompt !== undefined || options.varsFile !== undefined || options.vars.length > 0;
  const prompt =
    !stored || promptGiven
      ? {
          ...(options.systemPrompt ? { systemPrompt: findTemplateFile(options.systemPrompt, cwd) } : {}),
          ...(options.varsFile ? { varsFile: resolve(cwd, options.varsFile) } : {}),
          vars: options.vars,
        }
      : {
          ...(stored.system_prompt ? { systemPrompt: stored.system_prompt } : {}),
          ...(stored.vars_file ? { varsFile: stored.vars_file } : {}),
          vars: stored.vars,
        };
  return {
    ...planProfile(options, resumed, cwd),
    model: { ...(model ? { model } : {}), ...(baseUrl ? { baseUrl } : {}) },
    ...planDatabases(options, resumed),
    prompt,
  };
}

/** Refuses a resume whose databases no longer point where the session's did. */
export function checkDatabaseTargets(sessionId: string, expected: StoredDatabases['targets'], workspace: Workspace): void {
  for (const target of expected) {
    const now = workspace.databases.find((config) => config.alias === target.alias);
    const nowTarget = now ? describeDatabase(now) : undefined;
    if (nowTarget === target.target) continue;
    throw new UsageError(
      `session ${sessionId} used database ${target.alias} (${target.target}, from ${target.source}), which ` +
        `${nowTarget ? `is now ${nowTarget}` : 'is not configured now'}; configure it as before, or pass --db / --databases to choose the databases for ` +
        `this run`,
    );
  }
}

/** What a session records about its setup (see SessionMeta); never a password. */
export function setupRecord(plan: RunPlan, workspace: Workspace, cwd: string, env: NodeJS.ProcessEnv = process.env): SessionSetupRecord {
  const rawModel = plan.model.model ?? env.QUARRY_MODEL;
  const model = rawModel?.startsWith('script:') ? `script:${resolve(cwd, rawModel.slice('script:'.length))}` : rawModel;
  const databasesFile = plan.databases.databasesFile ?? env.QUARRY_DB_CONFIG;
  const databases: StoredDatabases = {
    db_flags: plan.databases.dbFlags.map((flag) => {
      const draft = parseDbFlag(flag, cwd);
      if (draft.engine === 'sqlite') return { flag: `${draft.alias ? `${draft.alias}=` : ''}sqlite:${draft.path}` };
      return { flag: redactUrl(flag), ...(draft.password !== undefined ? { password_removed: true } : {}) };
    }),
    ...(databasesFile ? { databases_file: resolve(cwd, databasesFile) } : {}),
    ...(plan.configFile ? { config_file: resolve(cwd, plan.configFile) } : {}),
    targets: workspace.databases.map((config) => ({ alias: config.alias, target: describeDatabase(config), source: config.source })),
  };
  return {
    profile_ref: plan.profileRef,
    profile_source: workspace.profile.source,
    profile_content: profileContent(workspace.profile),
    ...(model ? { model_spec: { model, ...(plan.model.baseUrl ? { base_url: plan.model.baseUrl } : {}) } } : {}),
    databases,
    prompt: {
      ...(plan.prompt.systemPrompt ? { system_prompt: plan.prompt.systemPrompt } : {}),
      ...(plan.prompt.varsFile ? { vars_file: plan.prompt.varsFile } : {}),
      vars: plan.prompt.vars,
    },
  };
}

/** REPL `/resume ID`: the REPL's profile stays, so only a session that ran under exactly it may be continued there. */
export function checkResumableUnder(session: Session, profile: Profile): void {
  const stored = session.info.profile_content;
  if (stored && profileDifferences(stored, profileContent(profile)).length === 0) return;
  throw new UsageError(
    `session ${session.id} ran under profile ${session.info.profile} (${session.info.profile_source ?? 'settings not recorded'}), not this REPL's ` +
      `${profile.name} (${profile.source}); continue it with quarry --resume ${session.id}`,
  );
}
