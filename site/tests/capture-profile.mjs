// Prints the DeviceProfile of headless Chromium's WebGPU adapter, the format of
// kernels/profiles/*.json. Usage (from site/):
//   node tests/capture-profile.mjs > ../kernels/profiles/chromium-swiftshader.json
import { launch, serve } from './browser.mjs';
import { BLANK, readProfile } from './profile.mjs';

const server = await serve('/nonexistent', BLANK);
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.goto(server.url + '/');
  const profile = await page.evaluate(readProfile);
  if (profile.error) throw new Error(profile.error);
  console.log(JSON.stringify(profile, null, 2));
} finally {
  await browser.close();
  server.close();
}
