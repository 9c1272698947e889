// Opens a speedscope JSON file in the speedscope application itself (the copy the npm package
// ships, loaded from disk in the system's headless Chromium; nothing is fetched) and checks it was
// imported as a speedscope file with its profiles listed. Prints "ok - ..." / "not ok - ... # why"
// lines and saves a screenshot.
// usage: node speedscope_app.js FILE.json SCREENSHOT.png NAME THREAD...
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [file, shot, name, ...threads] = process.argv.slice(2);
const results = [];
function check(what, ok, why) {
  results.push(ok);
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}${ok || !why ? '' : ' # ' + why}`);
}

(async () => {
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pyebpf-chromium-'));
  const browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1200, height: 700 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = browser.pages()[0] || await browser.newPage();
    page.setDefaultTimeout(15000);
    const logs = [], errors = [], remote = [];
    page.on('console', (m) => logs.push(m.text()));
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) remote.push(r.url()); });
    const app = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist/release/index.html');
    await page.goto('file://' + app);
    await page.setInputFiles('input[type=file]', file);
    await page.waitForFunction((n) => document.title.startsWith(n), name);
    check('speedscope imports the file as speedscope JSON',
      logs.some((l) => l.includes('Importing as speedscope json file')) && errors.length === 0, errors.join('; '));
    check('speedscope shows the profile name in the title', (await page.title()).startsWith(name), await page.title());
    const body = await page.textContent('body');
    const missing = threads.filter((t) => !body.includes(t));
    check('speedscope lists one profile per thread', missing.length === 0, 'missing ' + missing.join(', '));
    check('speedscope app made no network request', remote.length === 0, remote.join(' '));
    await page.screenshot({ path: shot });
  } finally {
    await browser.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  process.exit(results.every(Boolean) ? 0 : 1);
})().catch((e) => { console.log(`not ok - speedscope app # ${String(e).split('\n')[0]}`); process.exit(1); });
