(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message));
    document.body.setAttribute('data-errors', errors.join(' | '));
  });
  var D = JSON.parse(document.getElementById('data').textContent);
  var A = D.arrows, N = A.from.length;
  var LEFT = 120, RIGHT = 30, AXIS = 30, AGG = 2500;
  var canvas = document.getElementById('plot');
  var box = document.getElementById('plotbox');
  var info = document.getElementById('info');
  var bar = document.getElementById('bar');
  var ctx = canvas.getContext('2d');
  var dpr = window.devicePixelRatio || 1;

  // What is shown: message types, event kinds, nodes (lanes).
  var typeOn = D.types.map(function (t) { return !t.hidden; });
  var kindOn = {};
  D.kinds.forEach(function (k) { kindOn[k.cls] = true; });
  var lanes = [];       // lane -> index into D.nodes
  var laneOf = [];      // index into D.nodes -> lane, or -1
  var laneH = 56;
  var view = { a: D.fit[0], b: D.fit[1] };
  var hits = [];        // what the last frame drew, for hover: [kind, x0, y0, x1, y1, text]

  function setLanes(filter) {
    var want = parseNodes(filter);
    lanes = [];
    laneOf = D.nodes.map(function () { return -1; });
    D.nodes.forEach(function (id, i) {
      if (!want || want(id)) { laneOf[i] = lanes.length; lanes.push(i); }
    });
    var avail = Math.max(200, window.innerHeight - bar.offsetHeight - AXIS - 20);
    laneH = lanes.length <= 16 ? 56 : Math.max(4, Math.min(56, Math.floor(avail / lanes.length)));
    box.style.height = (AXIS + laneH * lanes.length + 20) + 'px';
  }
  // "1-10, 15" -> a predicate on node ids; empty -> null (every node).
  function parseNodes(text) {
    text = (text || '').trim();
    if (!text) return null;
    var parts = text.split(/[ ,]+/).filter(Boolean).map(function (p) {
      var m = p.match(/^(\d+)(?:-(\d+))?$/);
      if (!m) return null;
      return [Number(m[1]), Number(m[2] || m[1])];
    });
    if (parts.some(function (p) { return !p; })) {
      info.textContent = 'nodes: write ids and ranges, as "1-10, 15"';
      return null;
    }
    return function (id) { return parts.some(function (p) { return id >= p[0] && id <= p[1]; }); };
  }

  function width() { return canvas.clientWidth; }
  function xOf(t) { return LEFT + (t - view.a) / (view.b - view.a) * (width() - LEFT - RIGHT); }
  function tOf(x) { return view.a + (x - LEFT) / (width() - LEFT - RIGHT) * (view.b - view.a); }
  // How far the lanes have scrolled under the sticky canvas.
  function offset() { return Math.max(0, bar.offsetHeight - box.getBoundingClientRect().top); }
  function yOf(node) { var l = laneOf[node]; return l < 0 ? null : AXIS + laneH * l + laneH / 2; }

  function resize() {
    var h = Math.min(window.innerHeight - bar.offsetHeight, box.clientHeight);
    canvas.style.height = h + 'px';
    canvas.style.top = bar.offsetHeight + 'px';
    canvas.width = Math.round(canvas.clientWidth * dpr);
    canvas.height = Math.round(h * dpr);
  }

  function chevron(x, y, ang, size) {
    ctx.beginPath();
    ctx.moveTo(x - size * Math.cos(ang - 0.45), y - size * Math.sin(ang - 0.45));
    ctx.lineTo(x, y);
    ctx.lineTo(x - size * Math.cos(ang + 0.45), y - size * Math.sin(ang + 0.45));
    ctx.stroke();
  }

  function mark(cls, x, y, s) {
    ctx.save();
    ctx.translate(x, y);
    ctx.scale(s, s);
    ctx.lineWidth = 2.5;
    ctx.beginPath();
    switch (cls) {
      case 'suspect-true': ctx.arc(0, 0, 5, 0, 7); ctx.fillStyle = '#d62728'; ctx.fill(); break;
      case 'suspect-false': ctx.arc(0, 0, 5, 0, 7); ctx.fillStyle = '#fff'; ctx.fill(); ctx.strokeStyle = '#ff7f0e'; ctx.stroke(); break;
      case 'leader': ctx.moveTo(0, -7); ctx.lineTo(7, 0); ctx.lineTo(0, 7); ctx.lineTo(-7, 0); ctx.closePath();
        ctx.fillStyle = '#ffbf00'; ctx.fill(); ctx.lineWidth = 0.6; ctx.strokeStyle = '#000'; ctx.stroke(); break;
      case 'election': ctx.fillStyle = '#4a90d9'; ctx.fillRect(-1.5, -7, 3, 14); break;
      case 'stepdown': ctx.fillStyle = '#fff'; ctx.fillRect(-5, -5, 10, 10); ctx.strokeStyle = '#8e44ad'; ctx.strokeRect(-5, -5, 10, 10); break;
      case 'clock': ctx.fillStyle = '#17becf'; ctx.fillRect(-4, -4, 8, 8); break;
      case 'unsuspect': ctx.arc(0, 0, 3.5, 0, 7); ctx.fillStyle = '#2ca02c'; ctx.fill(); break;
      case 'violation': case 'stale':
        ctx.moveTo(-6, -6); ctx.lineTo(6, 6); ctx.moveTo(-6, 6); ctx.lineTo(6, -6);
        ctx.strokeStyle = cls === 'violation' ? '#d62728' : '#555'; ctx.lineWidth = cls === 'violation' ? 3.5 : 2.5; ctx.stroke(); break;
      default: ctx.arc(0, 0, 2, 0, 7); ctx.fillStyle = '#555'; ctx.fill();
    }
    ctx.restore();
  }

  var SPAN = { paused: 'rgba(158,202,225,0.6)', dead: 'rgba(150,150,150,0.45)', critical: '#2ca02c' };

  function draw() {
    var w = width(), h = canvas.height / dpr, off = offset();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, w, h);
    hits = [];
    var top = off - laneH, bottom = off + h;
    var first = Math.max(0, Math.floor((off - AXIS) / laneH) - 1);
    var last = Math.min(lanes.length - 1, Math.ceil((off + h) / laneH));
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT, AXIS, w - LEFT - RIGHT + 8, h - AXIS);
    ctx.clip();
    ctx.translate(0, -off);
    // Lanes.
    ctx.strokeStyle = '#333';
    ctx.lineWidth = laneH < 12 ? 0.5 : 1.2;
    ctx.beginPath();
    for (var l = first; l <= last; l++) {
      var y = AXIS + laneH * l + laneH / 2;
      ctx.moveTo(LEFT, y);
      ctx.lineTo(w - RIGHT, y);
    }
    ctx.stroke();
    // Spans: faults and critical sections.
    D.spans.forEach(function (s) {
      if (!kindOn[s[3]]) return;
      var y = yOf(s[0]);
      if (y === null || y < top || y > bottom + laneH || s[2] < view.a || s[1] > view.b) return;
      var x0 = Math.max(LEFT - 2, xOf(s[1])), x1 = Math.min(w, Math.max(x0 + 1, xOf(s[2])));
      var hh = s[3] === 'critical' ? Math.min(8, laneH) : laneH * 0.8;
      ctx.fillStyle = SPAN[s[3]] || '#ccc';
      ctx.fillRect(x0, y - hh / 2, x1 - x0, hh);
      hits.push(['span', x0, y - hh / 2 - off, x1, y + hh / 2 - off, s[4]]);
    });
    // Messages: each one, or aggregated when too many are in view.
    var shown = [];
    for (var i = 0; i < N; i++) {
      if (!typeOn[A.type[i]]) continue;
      var s0 = A.sent[i], r = A.recv[i];
      var end = r < 0 ? s0 : r;
      if (end < view.a || s0 > view.b) continue;
      var y0 = yOf(A.from[i]), y1 = yOf(A.to[i]);
      if (y0 === null || y1 === null) continue;
      if (Math.max(y0, y1) < top || Math.min(y0, y1) > bottom) continue;
      shown.push(i);
    }
    ctx.lineWidth = 1.3;
    // Labels on the arrows when few are in view, never over one another.
    var boxes = [], labelled = shown.length <= 150 && laneH >= 30;
    function label(text, x, y, colour) {
      var bw = 5.4 * text.length, b = [x, y - 9, x + bw, y + 2];
      if (boxes.some(function (o) { return b[0] < o[2] && o[0] < b[2] && b[1] < o[3] && o[1] < b[3]; })) return;
      boxes.push(b);
      ctx.fillStyle = colour;
      ctx.font = '9px sans-serif';
      ctx.fillText(text, x, y);
    }
    if (shown.length <= AGG) {
      shown.forEach(function (i) {
        var y0 = yOf(A.from[i]), y1 = yOf(A.to[i]), x0 = xOf(A.sent[i]), c = D.types[A.type[i]].colour;
        ctx.strokeStyle = c;
        ctx.setLineDash([]);
        if (A.recv[i] < 0) {
          // A lost message stops short, dashed, and ends in a cross.
          var xe = x0 + 14, ye = (y0 + y1) / 2;
          ctx.setLineDash([4, 3]);
          ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(xe, ye); ctx.stroke();
          ctx.setLineDash([]);
          ctx.beginPath(); ctx.moveTo(xe - 3, ye - 3); ctx.lineTo(xe + 3, ye + 3); ctx.moveTo(xe - 3, ye + 3); ctx.lineTo(xe + 3, ye - 3); ctx.stroke();
          hits.push(['msg', x0, y0 - off, xe, ye - off, i]);
        } else {
          var x1 = xOf(A.recv[i]);
          ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
          chevron(x1, y1, Math.atan2(y1 - y0, x1 - x0), Math.min(9, Math.max(4, laneH / 4)));
          if (labelled) label(A.brief[i], (x0 + x1) / 2 + 3, (y0 + y1) / 2 - 2, c);
          hits.push(['msg', x0, y0 - off, x1, y1 - off, i]);
        }
      });
    } else {
      // One stroke per (sender, receiver, type, 6-pixel column), as wide as the log of its count.
      var groups = {};
      shown.forEach(function (i) {
        var col = Math.floor((xOf(A.sent[i]) - LEFT) / 6);
        var k = col + ':' + A.from[i] + ':' + A.to[i] + ':' + A.type[i];
        var g = groups[k];
        if (!g) { g = groups[k] = { i: i, n: 0, lost: 0, flight: 0 }; }
        g.n++;
        if (A.recv[i] < 0) g.lost++; else g.flight += A.recv[i] - A.sent[i];
      });
      Object.keys(groups).forEach(function (k) {
        var g = groups[k], i = g.i;
        var got = g.n - g.lost, mean = got ? g.flight / got : 0;
        var y0 = yOf(A.from[i]), y1 = yOf(A.to[i]), x0 = xOf(A.sent[i]), x1 = xOf(A.sent[i] + mean);
        ctx.strokeStyle = D.types[A.type[i]].colour;
        ctx.lineWidth = 1 + Math.log(g.n);
        ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
        if (g.n > 1 && laneH >= 14) {
          ctx.fillStyle = ctx.strokeStyle;
          ctx.font = '9px sans-serif';
          ctx.fillText(String(g.n), (x0 + x1) / 2 + 3, (y0 + y1) / 2 - 2);
        }
        hits.push(['agg', x0, y0 - off, x1, y1 - off, g.n + ' ' + D.types[A.type[i]].name + ' messages node ' + D.nodes[A.from[i]] +
          ' -> node ' + D.nodes[A.to[i]] + ' from +' + A.sent[i].toFixed(1) + ' ms (' + got + ' received, mean ' + mean.toFixed(3) + ' ms in flight)']);
      });
      ctx.lineWidth = 1.3;
    }
    // Event marks.
    var ms = Math.min(1, laneH / 24);
    D.marks.forEach(function (m) {
      if (!kindOn[m[2]] || m[1] < view.a || m[1] > view.b) return;
      var y = yOf(m[0]);
      if (y === null || y < top || y > bottom + laneH) return;
      var x = xOf(m[1]);
      mark(m[2], x, y, ms);
      if (m[4] && laneH >= 30) {
        ctx.fillStyle = '#000';
        ctx.font = '10px sans-serif';
        ctx.fillText(m[4], x + 6, y - 9);
      }
      hits.push(['mark', x - 6, y - 6 - off, x + 6, y + 6 - off, m[3]]);
    });
    ctx.restore();
    // Node names: fixed at the left whatever the zoom.
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, AXIS, LEFT - 2, h - AXIS);
    var every = Math.max(1, Math.ceil(14 / laneH)), font = Math.max(8, Math.min(13, laneH));
    ctx.fillStyle = '#000';
    ctx.font = 'bold ' + font + 'px sans-serif';
    ctx.textBaseline = 'middle';
    for (var k = first; k <= last; k++) {
      if (k % every) continue;
      var yy = AXIS + laneH * k + laneH / 2 - off;
      if (yy < AXIS) continue;
      ctx.fillText(D.names[lanes[k]], 8, yy);
    }
    ctx.textBaseline = 'alphabetic';
    // The time axis: always on top of the view (the canvas is sticky).
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, w, AXIS);
    ctx.strokeStyle = '#333';
    ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(LEFT, AXIS - 4); ctx.lineTo(w - RIGHT, AXIS - 4); ctx.stroke();
    var step = niceStep((view.b - view.a) / 10);
    ctx.fillStyle = '#000';
    ctx.font = '11px sans-serif';
    ctx.textAlign = 'center';
    for (var t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {
      var x = xOf(t);
      ctx.beginPath(); ctx.moveTo(x, AXIS - 8); ctx.lineTo(x, AXIS - 4); ctx.stroke();
      ctx.fillText('+' + fmt(t, step) + ' ms', x, AXIS - 12);
    }
    ctx.textAlign = 'start';
    return shown.length;
  }
  function niceStep(raw) {
    raw = Math.max(raw, 0.0001);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = [1, 2, 5, 10].find(function (k) { return k * p >= raw; });
    return m * p;
  }
  function fmt(t, step) { return step >= 1 ? String(Math.round(t)) : t.toFixed(Math.min(4, Math.ceil(-Math.log10(step)))); }

  var pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; draw(); });
  }
  function setView(a, b) {
    var span = D.t1 - D.t0, min = Math.max(0.001, span / 1e6);
    var w = Math.min(span, Math.max(min, b - a));
    a = Math.min(D.t1 - w, Math.max(D.t0, a));
    view.a = a; view.b = a + w;
    redraw();
  }

  // The wheel zooms time around the pointer; shift (or a sideways wheel) pans time.
  canvas.addEventListener('wheel', function (e) {
    e.preventDefault();
    var r = canvas.getBoundingClientRect();
    var span = view.b - view.a;
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      var d = (e.shiftKey ? e.deltaY : e.deltaX) / r.width * span;
      setView(view.a + d, view.b + d);
      return;
    }
    var at = tOf(e.clientX - r.left);
    var k = e.deltaY < 0 ? 0.8 : 1.25;
    setView(at - (at - view.a) * k, at - (at - view.a) * k + span * k);
  }, { passive: false });
  // Dragging pans time sideways and scrolls the lanes up and down.
  var drag = null;
  canvas.addEventListener('mousedown', function (e) { drag = { x: e.clientX, y: e.clientY, a: view.a, sy: window.scrollY }; });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (e) {
    if (drag) {
      var r = canvas.getBoundingClientRect();
      var d = -(e.clientX - drag.x) / (r.width - LEFT - RIGHT) * (view.b - view.a);
      setView(drag.a + d, drag.a + d + (view.b - view.a));
      window.scrollTo(window.scrollX, drag.sy - (e.clientY - drag.y));
      return;
    }
    if (e.target !== canvas) return;
    var r2 = canvas.getBoundingClientRect();
    hover(e.clientX - r2.left, e.clientY - r2.top);
  });
  window.addEventListener('keydown', function (e) {
    if (e.target.tagName === 'INPUT') return;
    var span = view.b - view.a;
    if (e.key === 'ArrowLeft') setView(view.a - span / 5, view.b - span / 5);
    else if (e.key === 'ArrowRight') setView(view.a + span / 5, view.b + span / 5);
    else if (e.key === '+' || e.key === '=') setView(view.a + span / 8, view.b - span / 8);
    else if (e.key === '-') setView(view.a - span / 6, view.b + span / 6);
  });
  function distance(px, py, x0, y0, x1, y1) {
    var dx = x1 - x0, dy = y1 - y0, q = dx * dx + dy * dy;
    var u = q ? Math.max(0, Math.min(1, ((px - x0) * dx + (py - y0) * dy) / q)) : 0;
    return Math.hypot(px - x0 - u * dx, py - y0 - u * dy);
  }
  function hover(px, py) {
    if (py < AXIS) return;
    var best = null, bd = 6;
    hits.forEach(function (h) {
      var d = h[0] === 'mark' || h[0] === 'span'
        ? (px >= h[1] && px <= h[3] && py >= h[2] && py <= h[4] ? (h[0] === 'mark' ? 0 : 3) : 99)
        : distance(px, py, h[1], h[2], h[3], h[4]);
      if (d < bd || (d === bd && best && best[0] === 'span')) { bd = d; best = h; }
    });
    if (!best) return;
    info.textContent = best[0] === 'msg' ? describe(best[5]) : best[5];
  }
  function describe(i) {
    var s = A.brief[i] + ' #' + A.seq[i] + ': ' + D.names[A.from[i]] + ' -> ' + D.names[A.to[i]] + ', sent +' + A.sent[i].toFixed(3) + ' ms';
    if (A.recv[i] < 0) return s + ', never received';
    return s + ', received +' + A.recv[i].toFixed(3) + ' ms (' + (A.recv[i] - A.sent[i]).toFixed(3) + ' ms in flight)';
  }

  // Filters.
  function check(list, key, items, on, label) {
    var el = document.getElementById(list);
    items.forEach(function (it, k) {
      var l = document.createElement('label');
      var c = document.createElement('input');
      c.type = 'checkbox';
      c.checked = on(it, k);
      c.addEventListener('change', function () { key(it, k, c.checked); redraw(); });
      l.appendChild(c);
      l.appendChild(label(it));
      el.appendChild(l);
    });
  }
  check('types', function (t, k, v) { typeOn[k] = v; }, D.types, function (t, k) { return typeOn[k]; }, function (t) {
    var s = document.createElement('span');
    s.style.color = t.colour;
    s.textContent = '\u2192 ' + t.name + ' (' + t.count + ')';
    return s;
  });
  check('kinds', function (k, i, v) { kindOn[k.cls] = v; }, D.kinds, function () { return true; }, function (k) {
    var s = document.createElement('span');
    s.textContent = k.label + ' (' + k.count + ')';
    s.className = 'kind ' + k.cls;
    return s;
  });
  var nodesInput = document.getElementById('nodes');
  nodesInput.addEventListener('change', function () { setLanes(nodesInput.value); resize(); redraw(); });
  document.getElementById('fit').addEventListener('click', function () { setView(D.fit[0], D.fit[1]); });
  document.getElementById('all').addEventListener('click', function () { setView(D.t0, D.t1); });
  window.addEventListener('scroll', redraw);
  window.addEventListener('resize', function () { resize(); redraw(); });

  setLanes('');
  resize();
  // #all opens on the whole run rather than on the activity.
  if (window.location.hash === '#all') { view.a = D.t0; view.b = D.t1; }
  var started = performance.now();
  var drawn = draw();
  document.body.setAttribute('data-frame-ms', (performance.now() - started).toFixed(1));
  var b = document.body;
  b.setAttribute('data-lines', String(lanes.length));
  b.setAttribute('data-arrows', String(A.type.filter(function (t) { return typeOn[t]; }).length));
  b.setAttribute('data-drawn', String(drawn));
  b.setAttribute('data-view', view.a.toFixed(3) + ',' + view.b.toFixed(3));
  b.setAttribute('data-open-ms', performance.now().toFixed(0));
  if (window.location.hash === '#selftest') selftest(b);
  b.setAttribute('data-ok', 'yes');

  // #selftest: the browser test drives the page as a user would -- the wheel, a shifted
  // wheel, the node filter, a message type unticked -- and reads what went wrong (or "ok")
  // from data-selftest, since a headless browser's DOM dump is all it can see.
  function selftest(body) {
    var bad = [];
    var r = canvas.getBoundingClientRect();
    function wheel(dy, shift) {
      canvas.dispatchEvent(new WheelEvent('wheel', {
        deltaY: dy, shiftKey: !!shift, clientX: r.left + (r.width + LEFT - RIGHT) / 2,
        clientY: r.top + AXIS + 10, bubbles: true, cancelable: true
      }));
    }
    var span = view.b - view.a, lanesBefore = lanes.length;
    wheel(-120);
    if (!(view.b - view.a < span * 0.9)) bad.push('the wheel did not zoom in on time');
    if (lanes.length !== lanesBefore || laneOf.some(function (l, i) { return l !== i; })) bad.push('zooming changed the lanes');
    var a = view.a, w = view.b - view.a;
    // Pan away from whichever end of the run the view touches.
    wheel(view.b >= D.t1 ? -120 : 120, true);
    if (view.a === a || Math.abs(view.b - view.a - w) > w * 1e-6) bad.push('shift+wheel did not pan time alone');
    wheel(120);
    if (!(view.b - view.a > w)) bad.push('the wheel did not zoom out');
    document.getElementById('all').click();
    if (Math.abs(view.a - D.t0) + Math.abs(view.b - D.t1) > (D.t1 - D.t0) * 1e-9) bad.push('"all" did not show the whole run');
    var everything = draw();
    nodesInput.value = String(D.nodes[0]);
    nodesInput.dispatchEvent(new Event('change'));
    if (lanes.length !== 1) bad.push('the node filter "' + nodesInput.value + '" left ' + lanes.length + ' lanes');
    if (!(draw() < everything) && everything > 0) bad.push('the node filter did not hide the other nodes\' arrows');
    nodesInput.value = '';
    nodesInput.dispatchEvent(new Event('change'));
    if (lanes.length !== D.nodes.length) bad.push('clearing the node filter left ' + lanes.length + ' lanes');
    var boxes = document.querySelectorAll('#types input');
    var k = D.types.findIndex(function (t, i) { return typeOn[i] && t.count > 0; });
    if (k >= 0) {
      boxes[k].click();
      if (typeOn[k]) bad.push('unticking ' + D.types[k].name + ' left it on');
      if (!(draw() < everything)) bad.push('unticking ' + D.types[k].name + ' hid no arrow');
      boxes[k].click();
    }
    if (draw() !== everything) bad.push('undoing the filters did not bring every arrow back');
    body.setAttribute('data-selftest', bad.length ? bad.join('; ') : 'ok');
  }
})();
