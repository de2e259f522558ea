// DOM helpers every page's scripts share: elements built from data (never markup), and code
// blocks with the pieces that came from template values marked.

// An element with attributes and children (text nodes, never markup: names are data).
export const el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
};

// Code with the pieces that came from template values in <mark>.
export function codeBlock(code) {
  const inner = el('code', { class: `language-${code.language}` });
  for (const p of code.pieces) {
    inner.append(p.marked ? el('mark', { title: 'a template value, rendered for this device' }, p.text) : p.text);
  }
  return el('pre', { class: 'code' }, inner);
}

// A page URL with its flags (?talk, &speaker, &embed) written bare, as a visitor types them:
// URLSearchParams writes them `talk=`.
export const bareFlags = (url) => url.toString().replace(/([?&](?:talk|speaker|embed))=(?=&|$)/g, '$1');
