// Drives a generated SVG flame graph in headless Chromium (the system browser; nothing is
// downloaded): hover, click-to-zoom, search, reset. Prints one TAP-style line per check on stdout
// ("ok - name" / "not ok - name # why") for the shell test to count, and saves screenshots.
// usage: node svg_browser.js FILE.svg SCREENSHOT_PREFIX CLICK_LABEL SEARCH_TERM EXPECTED_MATCH_PCT
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [svgPath, shotPrefix, clickLabel, term, expectPct] = process.argv.slice(2);
const results = [];
function check(name, ok, why) {
  results.push(ok);
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${ok || !why ? '' : ' # ' + why}`);
}

(async () => {
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pyebpf-chromium-'));
  // A persistent context is how playwright passes --user-data-dir (a fresh temporary one).
  const browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1220, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = browser.pages()[0] || await browser.newPage();
    const requests = [];
    page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('file://' + path.resolve(svgPath));
    await page.waitForSelector('g.f');

    page.setDefaultTimeout(10000);
    // The frame whose label (first line of its <title>) is exactly `label`.
    const frameByLabel = async (label) => {
      const i = await page.evaluate((l) => [...document.querySelectorAll('g.f')]
        .findIndex((g) => g.querySelector('title').textContent.split('\n')[0] === l), label);
      if (i < 0) throw new Error(`no frame labelled ${label}`);
      return page.locator('g.f').nth(i);
    };
    const state = () => page.evaluate(() => {
      const svg = document.getElementById('flamegraph');
      const fs = [...document.querySelectorAll('g.f')];
      return {
        zoom: svg.getAttribute('data-zoom'),
        frames: fs.length,
        hidden: fs.filter((g) => g.style.display === 'none').length,
        matches: fs.filter((g) => g.classList.contains('match')).map((g) => g.querySelector('title').textContent.split('\n')[0]),
        matched: document.getElementById('matched').textContent,
        details: document.getElementById('details').textContent,
        reset: document.getElementById('reset').getAttribute('visibility'),
      };
    });
    const before = await state();
    check('svg loads with frames and no script error', before.frames > 0 && errors.length === 0, errors.join('; '));
    check('title names the target', /pyebpf|Flame/.test(await page.textContent('#title')));

    // Hover: the details line shows name, samples and percentage.
    const target = await frameByLabel(clickLabel);
    await target.locator('rect').hover();
    const hover = (await state()).details;
    check('hover shows name + samples + percentage',
      hover.includes(clickLabel) && /\d+ samples \(\d+\.\d\d%\)/.test(hover), JSON.stringify(hover));

    // Click: zoom into the frame.
    const info = await target.evaluate((g) => ({ x: +g.dataset.x, w: +g.dataset.w, d: +g.dataset.d }));
    await target.locator('rect').click();
    const z = await state();
    const width = +(await target.locator('rect').getAttribute('width'));
    check('click zooms: svg data-zoom set to the frame', z.zoom === `${info.x}:${info.w}:${info.d}`, z.zoom);
    check('click zooms: frame spans the full width', Math.abs(width - 1180) < 0.5, String(width));
    check('click zooms: frames outside the subtree hidden', z.hidden > 0 && z.hidden < z.frames, `${z.hidden}/${z.frames}`);
    check('reset zoom becomes visible', z.reset === 'visible', z.reset);
    const ancFaded = await page.evaluate(() => document.querySelectorAll('g.f.anc').length);
    check('ancestors stay, faded', ancFaded >= 1, String(ancFaded));
    await page.screenshot({ path: `${shotPrefix}-zoom.png` });

    // Reset, then search.
    await page.click('#reset');
    const r = await state();
    check('reset restores every frame', r.zoom === null && r.hidden === 0 && r.reset === 'hidden', JSON.stringify(r.zoom));
    await page.fill('#search', '');
    await page.type('#search', term);
    const s = await state();
    check('search highlights matching frames only',
      s.matches.length > 0 && s.matches.every((l) => new RegExp(term).test(l)), JSON.stringify(s.matches));
    const want = `Matched: ${expectPct}%`;
    check('search shows the matched percentage', s.matched.startsWith(want), `${s.matched} (want ${want})`);
    const magenta = await page.locator('g.f.match rect').first().evaluate((e) => getComputedStyle(e).fill);
    check('matches are drawn magenta', magenta === 'rgb(230, 0, 230)', magenta);
    await page.screenshot({ path: `${shotPrefix}-search.png` });

    await page.keyboard.press('Escape');
    const e = await state();
    check('Escape clears the search', e.matches.length === 0 && e.matched === '', e.matched);
    check('no network request made', requests.length === 0, requests.join(' '));
  } finally {
    await browser.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  process.exit(results.every(Boolean) ? 0 : 1);
})().catch((e) => { console.log(`not ok - browser run # ${String(e).split('\n')[0]}`); process.exit(1); });
