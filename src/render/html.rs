//! A self-contained HTML page around an SVG drawing: hover details, wheel zoom along time,
//! drag to pan; no network fetch.
//!
//! When its script has run, the page marks `<body>` with `data-ok`, `data-lines` (node lines)
//! and `data-arrows` (drawn messages), and any script error with `data-errors`: what the
//! browser test reads back from the rendered page.

use super::xml_escape as esc;

const SCRIPT: &str = r#"
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message));
    document.body.setAttribute('data-errors', errors.join(' | '));
  });
  var svg = document.querySelector('#drawing svg');
  var info = document.getElementById('info');
  var vb = svg.viewBox.baseVal;
  var full = { x: vb.x, y: vb.y, w: vb.width, h: vb.height };
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  svg.style.width = '100%';
  svg.addEventListener('mouseover', function (e) {
    var el = e.target.closest('[data-info]');
    if (el) {
      info.textContent = el.getAttribute('data-info');
      el.classList.add('hover');
    }
  });
  svg.addEventListener('mouseout', function (e) {
    var el = e.target.closest('[data-info]');
    if (el) el.classList.remove('hover');
  });
  function setX(x, w) {
    w = Math.min(full.w, Math.max(full.w / 200, w));
    x = Math.min(full.x + full.w - w, Math.max(full.x, x));
    svg.setAttribute('viewBox', x + ' ' + full.y + ' ' + w + ' ' + full.h);
  }
  svg.addEventListener('wheel', function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect();
    var cur = svg.viewBox.baseVal;
    var at = cur.x + (e.clientX - r.left) / r.width * cur.width;
    var k = e.deltaY < 0 ? 0.8 : 1.25;
    setX(at - (at - cur.x) * k, cur.width * k);
  }, { passive: false });
  var drag = null;
  svg.addEventListener('mousedown', function (e) { drag = { x: e.clientX, vx: svg.viewBox.baseVal.x }; });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (e) {
    if (!drag) return;
    var r = svg.getBoundingClientRect();
    var cur = svg.viewBox.baseVal;
    setX(drag.vx - (e.clientX - drag.x) / r.width * cur.width, cur.width);
  });
  document.getElementById('reset').addEventListener('click', function () { setX(full.x, full.w); });
  document.body.setAttribute('data-lines', String(svg.querySelectorAll('.node-line').length));
  document.body.setAttribute('data-arrows', String(svg.querySelectorAll('.msg').length));
  document.body.setAttribute('data-ok', 'yes');
})();
"#;

const STYLE: &str = r#"
body { font-family: sans-serif; margin: 0.5em 1em; }
#bar { position: sticky; top: 0; background: #fff; padding: 0.3em 0; border-bottom: 1px solid #ccc; }
#info { font-family: monospace; white-space: pre-wrap; min-height: 2.6em; color: #222; }
#drawing { overflow: hidden; cursor: grab; }
.hover line, .hover circle, .hover path, rect.hover { stroke-width: 3; filter: drop-shadow(0 0 2px #000); }
"#;

/// The page: a title, a help line, the details panel, and `svg` inline.
pub fn page(title: &str, svg: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head>\n\
         <body><div id=\"bar\"><b>{t}</b> &#8212; hover for details; wheel zooms time around the pointer, drag pans \
         <button id=\"reset\">reset zoom</button><div id=\"info\"></div></div>\n<div id=\"drawing\">\n{svg}</div>\n\
         <script>{SCRIPT}</script></body></html>\n",
        t = esc(title)
    )
}
