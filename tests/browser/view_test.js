// tests/browser/view_test.js: drives the viewer page in headless Chromium for tests/test_viewer.sh.
//
//   node tests/browser/view_test.js URL OUT_DIR
//
// Opens URL (a page nstbatch-view serves) at 640x480, waits for window.nstViewerReady, reads the
// panel, drags the wipe to x = 120, then shows image pixel (512, 256) at the window's centre at
// 1:1 (the deepest level) and pixel (350, 250) at 1:2, each once every tile is loaded, and saves
// OUT_DIR/zoom1.png and OUT_DIR/zoom2.png. Prints one JSON object: what it found (the drawer, the
// image's screen position at each zoom, the wipe, the panel's text), the console's errors and
// other messages, and the milliseconds each step took. Uses the system Chromium
// (CHROMIUM, default /usr/bin/chromium), never a downloaded browser.
'use strict';
const { chromium } = require('playwright-core');

const WIDTH = 640, HEIGHT = 480, WIPE_X = 120;
const [url, outDir] = process.argv.slice(2);

// Chromium's software GL (SwiftShader, headless) reports its own performance notes as console
// warnings; they come from the browser, not the page
const BROWSER_NOTE = /^\[\.WebGL-[0-9a-fx]+\]GL Driver Message/;

async function settle(page) {
  // after a zoom: let OpenSeadragon update, wait for every tile of both images, let it draw
  const frames = () => page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))));
  await frames();
  await page.waitForFunction(() => {
    const w = window.nstViewer.world;
    for (let i = 0; i < w.getItemCount(); i++) if (!w.getItemAt(i).getFullyLoaded()) return false;
    return !window.nstViewer.isAnimating();
  }, null, { timeout: 20000, polling: 50 });
  await frames();
}

async function showAt(page, zoom, x, y) {
  // 1 image pixel = 1/zoom screen pixels, image point (x, y) at the centre; the stylised image's
  // own conversions (the viewport's warn when a viewer holds two images)
  return page.evaluate(([zoom, x, y]) => {
    const v = window.nstViewer, item = v.world.getItemAt(0);
    v.viewport.zoomTo(item.imageToViewportZoom(zoom), null, true);
    v.viewport.panTo(item.imageToViewportCoordinates(x, y), true);
  }, [zoom, x, y]);
}

function where(page, x, y) {
  return page.evaluate(([x, y]) => {
    const p = window.nstViewer.world.getItemAt(0).imageToViewerElementCoordinates(new OpenSeadragon.Point(x, y));
    return [p.x, p.y];
  }, [x, y]);
}

async function main() {
  const t0 = Date.now(), ms = {};
  const lap = name => { ms[name] = Date.now() - t0; };
  const result = { errors: [], messages: [], browserNotes: 0 };
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage'], // root in a container: no user namespaces for the sandbox, maybe a 64 MB /dev/shm
  });
  try {
    const page = await browser.newPage({ viewport: { width: WIDTH, height: HEIGHT }, deviceScaleFactor: 1 });
    page.on('console', m => {
      if (m.type() === 'error') result.errors.push('console: ' + m.text());
      else if (BROWSER_NOTE.test(m.text())) result.browserNotes++;
      else result.messages.push(m.type() + ': ' + m.text());
    });
    page.on('pageerror', e => result.errors.push('page: ' + e.message));
    lap('launch');
    await page.goto(url);
    await page.waitForFunction(() => window.nstViewerReady === true || window.nstViewerError, null, { timeout: 30000 });
    lap('ready');
    Object.assign(result, await page.evaluate(() => ({
      viewerError: window.nstViewerError || null,
      drawer: window.nstViewer.drawer.getType(),
      items: window.nstViewer.world.getItemCount(),
      title: document.title,
    })));
    // the panel: opened, read, closed again
    await page.click('#panel summary');
    result.panel = await page.evaluate(() => ({
      config: document.getElementById('config').textContent,
      losses: Array.from(document.querySelectorAll('#losses tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent).join(' ')),
      about: document.getElementById('about').textContent,
    }));
    await page.click('#panel summary');
    // the wipe, dragged by its knob like a user would
    const knob = await page.locator('#wipe-knob').boundingBox();
    await page.mouse.move(knob.x + knob.width / 2, knob.y + knob.height / 2);
    await page.mouse.down();
    await page.mouse.move(WIPE_X, knob.y + knob.height / 2, { steps: 8 });
    await page.mouse.up();
    result.wipe = await page.evaluate(() => {
      const clip = window.nstViewer.world.getItemAt(1).getClip();
      return { left: document.getElementById('wipe').style.left, clipWidth: clip ? clip.width : null };
    });
    lap('panel and wipe');
    await showAt(page, 1, 512, 256);
    await settle(page);
    result.zoom1 = await where(page, 512, 256);
    await page.screenshot({ path: outDir + '/zoom1.png' });
    lap('1:1');
    await showAt(page, 0.5, 350, 250);
    await settle(page);
    result.zoom2 = await where(page, 350, 250);
    await page.screenshot({ path: outDir + '/zoom2.png' });
    lap('1:2');
  } finally {
    await browser.close();
  }
  result.ms = ms;
  console.log(JSON.stringify(result));
}

main().catch(e => {
  console.log(JSON.stringify({ fatal: String(e && e.message || e).split('\n')[0] }));
  process.exit(1);
});
