import { beforeAll, describe, expect, test } from 'vitest';
import { checkRestrictedCommand as checkWithEnvironment } from '../../../../src/tools/bash/policy/index.js';
import { awkProgramRefusal } from '../../../../src/tools/bash/policy/awk.js';
import { sedScriptRefusal } from '../../../../src/tools/bash/policy/sed.js';
import { localPolicyEnvironment, makeCanaryDir } from './canary.js';
import { BENIGN, ESCAPES } from './corpus.js';

let dir: string;
beforeAll(() => {
  dir = makeCanaryDir();
});
/** Checks a command as the bash tool would from the canary directory. */
const checkRestrictedCommand = (command: string) => checkWithEnvironment(command, localPolicyEnvironment(dir));

const allEscapes = Object.entries(ESCAPES).flatMap(([category, commands]) =>
  commands.map((command) => ({ category, command: command.replaceAll('{PID}', '4242') })),
);

describe('restricted shell policy', () => {
  test('the corpus is as large as the issue asks', () => {
    expect(allEscapes.length).toBeGreaterThanOrEqual(150);
    expect(BENIGN.length).toBeGreaterThanOrEqual(60);
  });

  test.each(allEscapes)('refuses [$category] $command', async ({ command }) => {
    const decision = await checkRestrictedCommand(command);
    expect(decision).toMatchObject({ allowed: false });
  });

  test.each(BENIGN.map((c) => c.command))('allows %s', async (command) => {
    expect(await checkRestrictedCommand(command)).toEqual({ allowed: true });
  });

  test('refusals name the word or option and say why', async () => {
    const cases: Array<[string, RegExp]> = [
      ['ls; rm -rf x', /"rm" is not allowed.*can change files.*\(in: rm -rf x\)/],
      ['find . -name x -delete', /find: -delete is refused: it deletes files/],
      ['sed -ni p x', /sed: the option -i is refused: it edits files in place/],
      ['sort --out=y x', /sort: the option --out \(--output\) is refused/],
      ['awk \'{print > "f"}\'', /awk: output redirection/],
      ['git -c core.pager=x log', /git: the global option -c is refused/],
      ['sort $(id)', /sort: the output of a command substitution could become any arguments here, and the check cannot prove that safe/],
      ['for f in *; do echo $HOME; done', /the variable \$HOME \(only the variable of an enclosing/],
      ['for f in "a b"; do ls $f; done', /\$f unquoted/],
      ['cat $(printf x)', /cat \$\(\.\.\.\): takes file names only from find.*not from printf/],
      ['docker ps', /shell_network: loopback.*this profile's shell_network is none; set shell_network/],
      ['systemctl stop x', /systemctl: "stop" is refused; only reading verbs.*\(status, show/],
      ['cat x > y', /redirection other than to \/dev\/null/],
      ['echo x | xargs sed -n', /xargs: may only run commands that are harmless.*"sed" is not one of them/],
      ['/bin/cat x', /without a path/],
      ['cat <<EOF\nx\nEOF', /here-document/],
    ];
    for (const [command, pattern] of cases) {
      const decision = await checkRestrictedCommand(command);
      expect(decision.allowed ? 'allowed' : decision.reason).toMatch(pattern);
    }
  });

  test('under shell_network: all, network commands still write no file and pick no other engine (red team)', async () => {
    const environment = { ...localPolicyEnvironment(dir), network: 'all' as const };
    const refused: Array<[string, RegExp]> = [
      // kubectl's global --profile-output/--log-file write anywhere, with every verb.
      ['kubectl get pods --profile=cpu --profile-output=notes.txt', /--profile.*writes/],
      ['kubectl get pods --profile-output=notes.txt', /--profile-output.*writes a file/],
      ['kubectl logs x --log-file notes.txt', /--log-file.*writes a file/],
      // curl 8.3+: --write-out '%output{FILE}' writes FILE.
      ["curl --write-out '%output{notes.txt}x' http://127.0.0.1/", /%output\{FILE\} writes a file/],
      ["curl --write-o '%OUTPUT{>>notes.txt}x' http://127.0.0.1/", /%output\{FILE\} writes a file/],
      // podman's global options are read after the subcommand too.
      ['podman ps --out notes.txt', /--out.*refused/],
      ['podman ps --url=ssh://example.com/run/podman.sock', /podman's global option/],
      ['podman images --root /tmp/x', /podman's global option/],
    ];
    for (const [command, pattern] of refused) {
      const decision = await checkWithEnvironment(command, environment);
      expect(decision.allowed ? 'allowed' : decision.reason, command).toMatch(pattern);
    }
    for (const command of [
      'kubectl version --client',
      'kubectl get pods -o wide',
      "curl --write-out '%{http_code}' http://127.0.0.1/",
      "podman ps --format '{{.Names}}'",
    ]) {
      expect(await checkWithEnvironment(command, environment), command).toEqual({ allowed: true });
    }
    // pflag takes no abbreviations: --client is version's own option; --client=false asks the server.
    expect(await checkRestrictedCommand('kubectl version --client')).toEqual({ allowed: true });
    expect(await checkRestrictedCommand('kubectl version --client=false')).toMatchObject({ allowed: false });
  });

  test('regressions of the Python original are refused', async () => {
    for (const command of [
      'ls; find . -delete',
      'find . -name x -delete',
      'sed -i s/a/b/ f',
      'awk \'BEGIN{system("id")}\'',
      'env sh',
      'env bash -c id',
      'git -c core.pager=id log',
      'curl -o f http://x/',
      'ls && curl -o f http://x/',
    ]) {
      expect(await checkRestrictedCommand(command), command).toMatchObject({ allowed: false });
    }
  });

  test('only the first command checked (a Python-original bug): every command of a line is checked', async () => {
    for (const command of ['ls && rm x', 'ls || rm x', 'ls | rm x', 'ls\nrm x', 'cat x; sed -i s/a/b/ x', 'grep a x | xargs rm']) {
      expect(await checkRestrictedCommand(command)).toMatchObject({ allowed: false });
    }
  });

  test('awk programs: printing and comparisons pass, system/pipes/redirection do not', () => {
    expect(awkProgramRefusal('{ print $1, $2 }')).toBeNull();
    expect(awkProgramRefusal('$3 > 100 { n++ } END { print n }')).toBeNull();
    expect(awkProgramRefusal('/a|b/ { print }')).toBeNull();
    expect(awkProgramRefusal('{ print ($1 > 2) }')).toBeNull();
    expect(awkProgramRefusal('{ x = a / 2; y = b / 3 }')).toBeNull();
    expect(awkProgramRefusal('{ print "system" }')).toBeNull();
    expect(awkProgramRefusal('{ x = a / 2; system("id"); y = b / 3 }')).toMatch(/system/);
    expect(awkProgramRefusal('{ print $1 > 2 }')).toMatch(/redirection/);
    expect(awkProgramRefusal('{ printf("%s", $1) >> "f" }')).toMatch(/redirection/);
    expect(awkProgramRefusal('{ "date" | getline d }')).toMatch(/pipe/);
  });

  test('awk is lexed as awk lexes it: no code hides in what a scanner takes for a regex or a string', () => {
    for (const ok of [
      'NR == 1 { print 10 / 2 }',
      '/a\\/b/ { print }',
      '{ print $1 }\n/x/ { n++ }',
      'BEGIN { if (x) print "a" }',
      '{ a[$1]++ } END { for (k in a) print k, a[k] }',
      '{ print "x",\n "y" }',
      '{ print ($1 > 2) }',
      'BEGIN { x = 1.5 / 3 }',
      '/[[:alpha:]]+/ { print }',
    ]) {
      expect(awkProgramRefusal(ok), ok).toBeNull();
    }
    for (const [bad, why] of [
      ['BEGIN { print 1. / 2 > "f"; y = 3 / 1 }', /redirection/],
      ['BEGIN{print 1 \\\n/ 2 > "f"; y = 4 /2 }', /redirection/],
      ['x\n/#|a/ { print > "f" }', /redirection/],
      ['{ print /"/ > "f" }', /redirection/],
      ['/[]/"]|a/ { print > "f" }', /inside \[\.\.\.\]/],
      ['BEGIN { x = 1; print x++ / 2 > "f" }', /\+\+/],
      ['BEGIN { print "x",\n "y" > "f" }', /redirection/],
      ['BEGIN { if (1) /"/ ; print > "f" # " }', /redirection/],
      ['BEGIN { while ((getline l < f) > 0) print l }', /getline < FILE/],
      ['BEGIN { ARGV[1] = "x" }', /ARGV/],
      ['BEGIN { print "unterminated }', /string/],
    ] as const) {
      expect(awkProgramRefusal(bad), bad).toMatch(why);
    }
  });

  test('sed scripts: reading commands pass, w/W/e and the w/e flags do not', () => {
    for (const ok of [
      'p',
      '1,5p',
      '/x/d',
      's/a/b/g',
      's|a|b|2p',
      'y/abc/xyz/',
      ':a;N;ba',
      '$!N;P;D',
      '1i\\header',
      '/start/,/end/{s/x/y/;p}',
      '0~2d',
      '5q',
      'r other.txt',
    ]) {
      expect(sedScriptRefusal(ok), ok).toBeNull();
    }
    for (const bad of ['w out', '1w out', 's/a/b/w out', 's/a/b/e', 'e id', '/x/W out', '$!{w out\n}', 's/a/b/;w out', 'b end w x', '1a foo\nw out']) {
      expect(sedScriptRefusal(bad), bad).not.toBeNull();
    }
  });
});
