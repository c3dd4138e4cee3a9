import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { takeScreenshots } from '../../scripts/screenshots.ts';
import { DESKTOP, MOBILE, screenshotDir, webSuite } from './support.ts';

/**
 * Issue 14 "Screenshots of the main pages at desktop and mobile widths saved as CI
 * artifacts": the script `npm run screenshots` runs, here into SVC_SCREENSHOT_DIR (or a temp
 * dir), so every CI run leaves the pictures of the build it tested.
 */
const suite = webSuite();

test('issue 14: npm run screenshots photographs the main pages of both apps at 1280 and 390 px', async () => {
  const dir = await screenshotDir();
  const files = await takeScreenshots({ svc: suite.svc, browser: suite.browser, dir });
  const names = files.map((f) => path.basename(f));
  for (const app of ['mssp', 'portal']) {
    for (const width of ['desktop', 'mobile']) {
      assert.ok(names.includes(`${app}-login-${width}.png`), names.join(', '));
      assert.ok(names.includes(`${app}-landing-${width}.png`), names.join(', '));
      assert.ok(names.includes(`${app}-incident-detail-${width}.png`), names.join(', '));
    }
  }
  // Beyond sign-in and landing: every page of each app's navigation.
  assert.ok(names.length > 8, names.join(', '));
  for (const file of files) {
    const png = await readFile(file);
    assert.equal(png.subarray(1, 4).toString(), 'PNG', file);
    // IHDR width (bytes 16-19): the viewport the name promises, so nothing scrolls sideways.
    const width = png.readUInt32BE(16);
    assert.equal(width, file.includes('-mobile') ? MOBILE.width : DESKTOP.width, file);
  }
});
