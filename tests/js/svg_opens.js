// Opens a flame graph in headless Chromium at 1400×900, as a user's first look at it, and checks
// from the DOM's bounding boxes (not by eye) that the root frame and the hottest functions are
// inside the window without scrolling. Then zooms into the frame given (if any) and checks that
// frames deeper than the first view appear and the graph grows to hold them.
// Prints one TAP-style line per check; saves the first screenshot as SHOT.
// usage: node svg_opens.js FILE.svg SHOT.png [ZOOM_LABEL]
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [svgPath, shot, zoomLabel] = process.argv.slice(2);
const results = [];
function check(name, ok, why) {
  results.push(ok);
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${ok || !why ? '' : ' # ' + why}`);
}

(async () => {
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pyebpf-chromium-'));
  const browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = browser.pages()[0] || await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('file://' + path.resolve(svgPath));
    await page.waitForSelector('g.f');
    await page.screenshot({ path: shot });
    // Every frame as the window shows it: label, samples, own samples (its width less its
    // children's), and whether its rectangle lies wholly inside the window.
    const view = await page.evaluate(() => {
      const gs = [...document.querySelectorAll('g.f')];
      const fr = gs.map((g) => {
        const r = g.querySelector('rect').getBoundingClientRect();
        return {
          label: g.querySelector('title').textContent.split('\n')[0],
          x: +g.dataset.x, w: +g.dataset.w, d: +g.dataset.d, own: +g.dataset.w,
          shown: g.style.display !== 'none' && r.height > 0,
          inside: r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth,
        };
      });
      // A child lies inside its parent's x range, one row deeper.
      const byDepth = {};
      fr.forEach((f) => (byDepth[f.d] = byDepth[f.d] || []).push(f));
      fr.forEach((f) => (byDepth[f.d + 1] || []).forEach((c) => {
        if (c.x >= f.x && c.x + c.w <= f.x + f.w) f.own -= c.w;
      }));
      return { frames: fr, height: document.documentElement.getBoundingClientRect().height };
    });
    check('opens with no script error', errors.length === 0, errors.join('; '));
    const root = view.frames.find((f) => f.d === 0);
    check('root frame inside the first screen', root && root.shown && root.inside, JSON.stringify(root));
    // The five functions with the most own samples (of those with at least 1 % of them: the
    // graph promises nothing about rarer ones), each by its widest frame.
    const own = {};
    view.frames.forEach((f) => { if (f.d > 0) own[f.label] = (own[f.label] || 0) + f.own; });
    const top = Object.keys(own).filter((l) => own[l] * 100 >= root.w)
      .sort((a, b) => own[b] - own[a]).slice(0, 5);
    check('some function holds 1 % of the samples', top.length > 0, JSON.stringify(own));
    for (const label of top) {
      const widest = view.frames.filter((f) => f.label === label).sort((a, b) => b.w - a.w)[0];
      check(`top function inside the first screen: ${label}`, widest.shown && widest.inside,
        JSON.stringify(widest));
    }
    if (zoomLabel) {
      const before = view.frames.filter((f) => f.shown).length;
      const i = view.frames.findIndex((f) => f.label === zoomLabel);
      await page.locator('g.f rect').nth(i).click();
      const after = await page.evaluate(() => ({
        shown: [...document.querySelectorAll('g.f')].filter((g) => g.style.display !== 'none').map((g) => +g.dataset.d),
        height: +document.getElementById('flamegraph').getAttribute('height'),
      }));
      const deepest = Math.max(...after.shown);
      const deepBefore = Math.max(...view.frames.filter((f) => f.shown).map((f) => f.d));
      check('zoom shows frames deeper than the first view', deepest > deepBefore, `${deepest} <= ${deepBefore}`);
      check('zoom grows the graph to hold them', after.height >= 70 + (deepest + 1) * 16 + 50,
        `${after.height} for depth ${deepest}`);
      const clicked = await page.locator('g.f').nth(i).locator('rect').boundingBox();
      check('zoomed frame stays in the window', clicked && clicked.y >= 0 && clicked.y + clicked.height <= 900,
        JSON.stringify(clicked));
      check('frames shown before the zoom were ' + before, before > 0);
    }
  } finally {
    await browser.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  process.exit(results.every(Boolean) ? 0 : 1);
})().catch((e) => { console.log(`not ok - browser run # ${String(e).split('\n')[0]}`); process.exit(1); });
