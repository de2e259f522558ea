// A page may offer a model in the Hugging Face layout: fetched before the demo starts and handed
// over as bytes (window.kilnModel), the page's #weights note saying which. Returns whether the
// site carries it; without it the demo says so and runs on its built-in weights.
export async function fetchModel(dir) {
  const note = document.getElementById('weights');
  // The build lists the models it carried beside them (scripts/build-site.sh); fetching a file
  // that is not there would log a 404.
  const slash = dir.lastIndexOf('/');
  const listed = await fetch(`${dir.slice(0, slash)}/index.json`)
    .then((r) => (r.ok ? r.json() : { models: [] }))
    .catch(() => ({ models: [] }));
  const name = dir.slice(slash + 1);
  if (!listed.models.includes(name)) {
    if (note) note.textContent = 'built-in synthetic weights (this site was built without the model)';
    return false;
  }
  if (note) note.textContent = `downloading ${dir}…`;
  const files = {};
  for (const name of ['config.json', 'model.safetensors', 'vocab.txt']) {
    const r = await fetch(`${dir}/${name}`);
    if (!r.ok) throw new Error(`${dir}/${name}: HTTP ${r.status}`);
    files[name] = new Uint8Array(await r.arrayBuffer());
  }
  window.kilnModel = { source: dir, ...files };
  if (note) note.textContent = dir;
  return true;
}
