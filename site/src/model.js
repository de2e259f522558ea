// A page may offer a model in the Hugging Face layout: fetched before the demo starts and handed
// over as bytes (window.kilnModel), the page's #weights note saying which. Returns whether the
// site carries it; without it the demo says so and runs on its built-in weights.
export async function fetchModel(dir) {
  const note = document.getElementById('weights');
  // The build lists the models it carried beside them (scripts/build-site.sh); fetching a file
  // that is not there would log a 404.
  const slash = dir.lastIndexOf('/');
  const listed = await listedModels(dir.slice(0, slash));
  if (!listed.models.includes(dir.slice(slash + 1))) {
    if (note) note.textContent = 'built-in synthetic weights (this site was built without the model)';
    return false;
  }
  // The visitor reads the model's name (the page's data-model-name), not its folder on the site.
  const name = document.querySelector('script[data-model]')?.dataset.modelName ?? dir;
  if (note) note.textContent = `downloading ${name}…`;
  // The weights are tens of megabytes: a progress bar (#model-progress) follows the download,
  // read as a stream against its Content-Length, so a slow network shows where it stands.
  const bar = document.getElementById('model-progress');
  const files = {};
  for (const file of ['config.json', 'model.safetensors', 'vocab.txt']) {
    const r = await fetch(`${dir}/${file}`);
    if (!r.ok) throw new Error(`${dir}/${file}: HTTP ${r.status}`);
    files[file] = file === 'model.safetensors' ? await readWithProgress(r, bar, note, name) : new Uint8Array(await r.arrayBuffer());
  }
  window.kilnModel = { source: name, ...files };
  if (bar) bar.hidden = true;
  if (note) note.textContent = name;
  return true;
}

// What the build carries in `folder` (its index.json): `models`, the folders of weights, and
// `compare`, those the transformers.js comparison can run on. Nothing, when it cannot be read.
// Read once per page (the loader and the comparison both ask).
const listings = new Map();
export function listedModels(folder) {
  if (!listings.has(folder)) {
    listings.set(folder, fetch(`${folder}/index.json`)
      .then((r) => (r.ok ? r.json() : {}))
      .catch(() => ({}))
      .then((listed) => ({ models: listed.models ?? [], compare: listed.compare ?? [] })));
  }
  return listings.get(folder);
}

// A response's body, read chunk by chunk into one array; the bar and the note show the bytes
// read of the total (without a Content-Length, the bytes read alone).
async function readWithProgress(response, bar, note, name) {
  const total = Number(response.headers.get('Content-Length')) || 0;
  if (!response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const chunks = [];
  let got = 0;
  const mb = (n) => (n / 1e6).toFixed(1);
  if (bar) {
    bar.hidden = false;
    bar.value = 0;
    if (total) bar.max = total; else bar.removeAttribute('value');
  }
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    got += value.length;
    if (bar && total) bar.value = got;
    if (note) note.textContent = `downloading ${name}: ${mb(got)}${total ? ` of ${mb(total)}` : ''} MB of weights`;
  }
  const bytes = new Uint8Array(got);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return bytes;
}
