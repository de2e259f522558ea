// The offline mode's service worker (registered by talk.js in presenter mode, in a secure
// context). scripts/build-site.sh writes the build's manifest into BUILD below: a version (a
// hash of every file's path and bytes) and the list of files. Installing keeps every file of the
// build in a cache named after that version, so the talk runs with the network off; activating
// deletes the caches of older builds. Requests for the build's files are answered from the
// cache first (the query ignored: ?talk&stage=3 is the page's file; the network if the cache
// has lost one); every other request (another host, such as a fleet collector; a file the build
// does not hold) is left to the browser.
const BUILD = /* build manifest */ { version: 'unbuilt', cache: 'kiln-unbuilt', bytes: 0, files: [] };

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(BUILD.cache);
    // Past the browser's HTTP cache: the files of this build, not older copies.
    await cache.addAll(BUILD.files.map((f) => new Request(new URL(f, self.registration.scope), { cache: 'reload' })));
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith('kiln-') && name !== BUILD.cache) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

// The build's files by path.
const HELD = new Set(BUILD.files.map((f) => new URL(f, self.registration.scope).pathname));

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin || !HELD.has(url.pathname)) return;
  event.respondWith((async () => {
    const cache = await caches.open(BUILD.cache);
    return (await cache.match(request, { ignoreSearch: true })) ?? fetch(request);
  })());
});
