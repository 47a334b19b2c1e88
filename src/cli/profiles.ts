import type { Argv } from 'yargs';
import { listProfileNames, loadProfile } from '../profiles/load.js';
import { ProfileError } from '../errors.js';
import type { Profile } from '../profiles/schema.js';
import { EXIT_OK, EXIT_USAGE } from '../errors.js';

function describeProfile(profile: Profile): string {
  const approval =
    profile.approval.mode === 'granular'
      ? `granular (tools: ${profile.approval.tools.join(', ') || 'none'}; patterns: ${profile.approval.patterns.join(', ') || 'none'})`
      : profile.approval.mode;
  return [
    `name:          ${profile.name}`,
    `source:        ${profile.source}`,
    `description:   ${profile.description}`,
    `shell:         ${profile.shell}`,
    `file_write:    ${profile.file_write}`,
    `database:      ${profile.database}`,
    `approval:      ${approval}`,
    `shell_timeout: ${profile.shell_timeout} s`,
    `backend:       ${profile.backend}`,
    `untrusted_data: ${profile.untrusted_data} (outward calls after untrusted content)`,
    `tools:         ${profile.tools ? profile.tools.join(', ') : '(all the modes allow)'}`,
    `write_roots:   ${profile.write_roots.length ? profile.write_roots.join(', ') : '(working dir and temp dir only)'}`,
    `shell_network: ${profile.shell_network}`,
    `query_guard:   ${
      profile.query_guard ? `${profile.query_guard.action} above ${profile.query_guard.max_estimated_rows.toLocaleString('en-US')} estimated rows` : 'off'
    }`,
    `profile_budget_seconds: ${profile.profile_budget_seconds} s`,
  ].join('\n');
}

/** `quarry profiles` and `quarry profiles show NAME`. */
export function registerProfilesCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'profiles [action] [name]',
    'List profiles, or `profiles show NAME` for one profile in full',
    (y) =>
      y
        .positional('action', { choices: ['list', 'show'] as const, default: 'list' as const })
        .positional('name', { type: 'string', describe: 'Profile name or YAML path (for show)' }),
    (argv) => {
      if (argv.action === 'show') {
        process.stdout.write(`${describeProfile(loadProfile(argv.name ?? 'readonly'))}\n`);
      } else {
        // Every profile that loads is listed; each broken file is reported on stderr with its
        // error, and the exit code (2) says that one was broken.
        const rows: string[] = [];
        const broken: string[] = [];
        for (const name of listProfileNames()) {
          let p: Profile;
          try {
            p = loadProfile(name);
          } catch (error) {
            if (!(error instanceof ProfileError)) throw error;
            broken.push(`quarry: profile "${name}" is broken: ${error.message}`);
            continue;
          }
          rows.push(
            `${name.padEnd(12)} shell=${p.shell.padEnd(12)} file_write=${p.file_write.padEnd(11)} database=${p.database.padEnd(9)} ` +
              `approval=${p.approval.mode.padEnd(9)} backend=${p.backend.padEnd(7)} ${p.source === 'built-in' ? '' : `(${p.source})`}`.trimEnd(),
          );
        }
        process.stdout.write(`${rows.join('\n')}\n`);
        if (broken.length) {
          process.stderr.write(`${broken.join('\n')}\n`);
          setExit(EXIT_USAGE);
          return;
        }
      }
      setExit(EXIT_OK);
    },
  );
}
