// Opens a differential flame graph in headless Chromium and reads, from the DOM, the colour of
// the frames named, and the details line when each is hovered. Prints one JSON object on stdout:
//   {"LABEL": {"fill": "rgb(r, g, b)", "details": "...", "w": N, "b": N}, ...}
// usage: node svg_diff.js FILE.svg LABEL...
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [svgPath, ...labels] = process.argv.slice(2);
(async () => {
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pyebpf-chromium-'));
  const browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const out = { errors: [] };
  try {
    const page = browser.pages()[0] || await browser.newPage();
    page.on('pageerror', (e) => out.errors.push(String(e)));
    await page.goto('file://' + path.resolve(svgPath));
    await page.waitForSelector('g.f');
    for (const label of labels) {
      // The widest frame of that label (a function may appear under several callers).
      const i = await page.evaluate((l) => {
        let best = -1, w = -1;
        document.querySelectorAll('g.f').forEach((g, k) => {
          if (g.querySelector('title').textContent.split('\n')[0] === l && +g.dataset.w > w) {
            best = k; w = +g.dataset.w;
          }
        });
        return best;
      }, label);
      if (i < 0) { out[label] = null; continue; }
      const g = page.locator('g.f').nth(i);
      await g.locator('rect').hover();
      out[label] = await g.evaluate((e) => ({
        fill: getComputedStyle(e.querySelector('rect')).fill,
        details: document.getElementById('details').textContent,
        w: +e.dataset.w, b: +e.dataset.b,
      }));
    }
  } finally {
    await browser.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.log(JSON.stringify({ errors: [String(e).split('\n')[0]] })); process.exit(1); });
