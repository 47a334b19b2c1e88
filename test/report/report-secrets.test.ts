import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../src/report/html.js';
import { redactSecrets } from '../../src/report/redact.js';
import { knownSecretValues } from '../../src/security/secret-values.js';

describe('reports defang known secret values', () => {
  it('finds the secret variables of the environment and removes their values from text and links, in every spelling', () => {
    const env = { OPENAI_API_KEY: 'sk-live-1234567890', PGPASSWORD: 'p&ss<word>"1', HOME: '/home/u', SHORT_TOKEN: 'abc' };
    const secrets = knownSecretValues(env);
    expect(secrets.sort()).toEqual(['p&ss<word>"1', 'sk-live-1234567890']);
    const page = renderMarkdown(
      `See [the dashboard](https://evil.example/collect?k=${encodeURIComponent('sk-live-1234567890')}) and the password ${env.PGPASSWORD}; key sk-live-1234567890.`,
    );
    const clean = redactSecrets(page, secrets);
    expect(clean).not.toContain('sk-live-1234567890');
    expect(clean).not.toContain(encodeURIComponent('sk-live-1234567890'));
    expect(clean).not.toContain('p&amp;ss&lt;word&gt;');
    expect(clean.match(/\[secret removed\]/g)).toHaveLength(3);
  });
});

describe('links in a report', () => {
  it('a connection URL stays whole: the user@host inside it is not split by a "(mailto:…)"', () => {
    const page = renderMarkdown('Connect with postgres://bob:pw@db.example.com/sales or write to ann@example.com.');
    expect(page).toBe('<p>Connect with postgres://bob:pw@db.example.com/sales or write to ann@example.com.</p>\n');
  });

  it('a written link shows its text, then its address as text; nothing is a live link', () => {
    const page = renderMarkdown('[mail me](mailto:ann@example.com), <bob@example.com> and [docs](https://example.org/a)');
    expect(page).toContain('mail me <span class="link-ref">(mailto:ann@example.com)</span>');
    expect(page).toContain('bob@example.com <span class="link-ref">(mailto:bob@example.com)</span>');
    expect(page).toContain('docs <span class="link-ref">(https://example.org/a)</span>');
    expect(page).not.toMatch(/<a\b/);
  });
});
