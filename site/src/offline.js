// The service worker (sw.js) keeps every file of the build (offline.json lists them) in one
// cache, so a walkthrough opened once runs again with the network off. Only a secure context
// has service workers. A new build takes over at once (the pages it takes over reload, below).
export async function offline() {
  const say = (state, text) => {
    document.body.dataset.offline = state;
    const line = document.getElementById('speaker-offline');
    if (line) line.textContent = text;
  };
  if (!window.isSecureContext || !('serviceWorker' in navigator)) {
    say('unavailable', 'Offline copy: none (service workers need HTTPS or localhost).');
    return;
  }
  try {
    say('caching', 'Offline copy: caching the site…');
    await navigator.serviceWorker.register(new URL('sw.js', import.meta.url));
    await navigator.serviceWorker.ready;
    const manifest = await (await fetch(new URL('offline.json', import.meta.url))).json();
    const cache = await caches.open(manifest.cache);
    const held = await Promise.all(manifest.files.map((f) => cache.match(new URL(f, import.meta.url))));
    const missing = held.filter((r) => !r).length;
    if (missing) say('partial', `Offline copy: ${missing} of ${manifest.files.length} files missing.`);
    else {
      say('ready', `Offline copy: ready — the whole site (${manifest.files.length} files, ` +
        `${(manifest.bytes / 1e6).toFixed(1)} MB) is kept in this browser.`);
    }
  } catch (e) {
    say('unavailable', `Offline copy: none (${e.message ?? e}).`);
  }
}
