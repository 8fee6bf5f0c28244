// Draws the report of tvm.relax.explore from the JSON in #report-data.
// Model text is only ever set with textContent / setAttribute, never parsed as HTML.
// <html data-errors="N" data-error-text="..."> records script errors; data-rendered the
// number of graphs drawn (read by the tests through a headless browser).
(function () {
  "use strict";
  var root = document.documentElement;
  var errors = [];
  function recordError(msg) {
    errors.push(String(msg));
    root.setAttribute("data-errors", String(errors.length));
    root.setAttribute("data-error-text", errors.join(" | "));
  }
  root.setAttribute("data-errors", "0");
  window.addEventListener("error", function (e) { recordError(e.message || "script error"); });
  var consoleError = console.error;
  console.error = function () {
    recordError(Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };

  var SVG_NS = "http://www.w3.org/2000/svg";
  var KIND_FILL = { input: "#dbe9f6", constant: "#f0f0f0", output: "#d9f0d3" };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG_NS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    return e;
  }
  function us(seconds) { return (seconds * 1e6).toFixed(2); }
  function ms(seconds) { return (seconds * 1e3).toFixed(3); }
  function pct(part, total) { return total > 0 ? (100 * part / total).toFixed(1) + "%" : "-"; }

  // ------------------------------------------------------------------ tabs
  var tabs = document.getElementById("tabs");
  var panes = document.getElementById("panes");
  var shown = [];
  function addPane(id, label, onShow) {
    var button = el("button", "tab", label);
    button.setAttribute("data-pane", id);
    var pane = el("section", "pane");
    pane.id = id;
    tabs.appendChild(button);
    panes.appendChild(pane);
    shown.push({ button: button, pane: pane, onShow: onShow });
    button.addEventListener("click", function () { show(id); });
    return pane;
  }
  function show(id) {
    shown.forEach(function (t) {
      var on = t.pane.id === id;
      t.pane.classList.toggle("active", on);
      t.button.classList.toggle("active", on);
      if (on && t.onShow) t.onShow();
    });
  }

  function table(headers, rows, numeric) {
    var t = el("table", "data");
    var tr = el("tr");
    headers.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    t.appendChild(el("thead")).appendChild(tr);
    var body = el("tbody");
    rows.forEach(function (row) {
      var r = el("tr");
      row.forEach(function (cell, i) { r.appendChild(el("td", numeric[i] ? "num" : null, cell)); });
      body.appendChild(r);
    });
    t.appendChild(body);
    return t;
  }

  // ------------------------------------------------------------------ graphs
  function edgePath(points) {
    var d = "M" + points[0][0] + "," + points[0][1];
    for (var i = 1; i < points.length; i++) {
      var a = points[i - 1], b = points[i], dy = (b[1] - a[1]) / 2;
      d += " C" + a[0] + "," + (a[1] + dy) + " " + b[0] + "," + (b[1] - dy) + " " + b[0] + "," + b[1];
    }
    return d;
  }

  function drawGraph(pane, g, kernels) {
    var byId = {};
    g.nodes.forEach(function (n) { byId[n.id] = n; });
    var bar = pane.appendChild(el("div", "toolbar"));
    var fitButton = bar.appendChild(el("button", null, "fit"));
    var inButton = bar.appendChild(el("button", null, "+"));
    var outButton = bar.appendChild(el("button", null, "\u2212"));
    bar.appendChild(el("span", "count", g.nodes.length + " nodes, " + g.edges.length + " edges"));
    var legend = bar.appendChild(el("span", "legend"));
    var wrap = pane.appendChild(el("div", "graph-wrap"));
    var canvas = svg("svg", { "class": "graph", "data-graph": g.id });
    wrap.appendChild(canvas);
    var details = wrap.appendChild(el("aside", "details"));
    details.appendChild(el("p", "hint", "Click a node for its details; drag to pan, wheel to zoom."));

    var defs = canvas.appendChild(svg("defs", {}));
    var marker = defs.appendChild(svg("marker", {
      id: "arrow-" + g.id.replace(/[^A-Za-z0-9_-]/g, "_"), viewBox: "0 0 8 8", refX: "8", refY: "4",
      markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse"
    }));
    marker.appendChild(svg("path", { d: "M0,0 L8,4 L0,8 z", "class": "arrow" }));
    var view = canvas.appendChild(svg("g", { "class": "viewport" }));
    var edgeLayer = view.appendChild(svg("g", { "class": "edges" }));
    var nodeLayer = view.appendChild(svg("g", { "class": "nodes" }));
    var edgeEls = [];
    g.edges.forEach(function (e) {
      var p = svg("path", { d: edgePath(e.points), "class": "edge",
                            "marker-end": "url(#" + marker.id + ")" });
      p.setAttribute("data-src", e.src);
      p.setAttribute("data-dst", e.dst);
      edgeLayer.appendChild(p);
      edgeEls.push(p);
    });
    var nodeEls = {};
    g.nodes.forEach(function (n) {
      var grp = svg("g", { "class": "node kind-" + n.kind, transform: "translate(" + (n.x - n.w / 2) + "," + (n.y - n.h / 2) + ")" });
      grp.setAttribute("data-id", n.id);
      if (n.kernel) grp.setAttribute("data-kernel", n.kernel);
      if (n.call) grp.setAttribute("data-call", n.call);
      var fill = n.color || KIND_FILL[n.kind] || "#ffffff";
      grp.appendChild(svg("rect", { width: n.w, height: n.h, rx: n.kind === "constant" ? 12 : 4, fill: fill }));
      var t1 = svg("text", { x: 8, y: 15, "class": "l1" });
      t1.textContent = clip(n.label[0], n.w);
      var t2 = svg("text", { x: 8, y: 30, "class": "l2" });
      t2.textContent = clip(n.label[1], n.w);
      grp.appendChild(t1);
      grp.appendChild(t2);
      var tip = svg("title", {});
      tip.textContent = n.label[0] + "\n" + n.label[1] + (n.kernel ? "\nkernel: " + n.kernel : "");
      grp.appendChild(tip);
      grp.addEventListener("click", function (ev) { ev.stopPropagation(); select(n.id); });
      nodeLayer.appendChild(grp);
      nodeEls[n.id] = grp;
    });
    canvas.setAttribute("data-node-count", String(g.nodes.length));

    var usedKernels = {};
    g.nodes.forEach(function (n) { if (n.kernel) usedKernels[n.kernel] = true; });
    kernels.forEach(function (k) {
      if (!usedKernels[k.name]) return;
      var chip = legend.appendChild(el("span", "chip", k.name));
      chip.style.background = k.color;
      chip.addEventListener("click", function () { highlight(function (n) { return n.kernel === k.name; }, null); });
    });

    function clip(text, width) {
      var max = Math.max(4, Math.floor((width - 12) / 6.6));
      return text.length > max ? text.slice(0, max - 1) + "\u2026" : text;
    }
    // marks the nodes `member(n)` accepts (those of one kernel call, or kernel) and the selection
    function highlight(member, selected) {
      g.nodes.forEach(function (n) {
        var e = nodeEls[n.id], inside = !!member && member(n);
        e.classList.toggle("selected", n.id === selected);
        e.classList.toggle("same-kernel", inside && n.id !== selected);
        e.classList.toggle("dim", !!member && !inside && n.id !== selected);
      });
      edgeEls.forEach(function (p) {
        var on = selected && (p.getAttribute("data-src") === selected || p.getAttribute("data-dst") === selected);
        p.classList.toggle("hot", !!on);
      });
    }
    function select(id) {
      var n = byId[id];
      highlight(n.call ? function (m) { return m.call === n.call; } : null, id);
      while (details.firstChild) details.removeChild(details.firstChild);
      details.appendChild(el("h3", null, n.name));
      var rows = [["op", n.op], ["kind", n.kind], ["type", (n.shape + " " + n.dtype).trim()]];
      if (n.kernel) rows.push(["kernel", n.kernel]);
      if (n.call && n.call !== n.name) rows.push(["kernel call", n.call]);
      if (n.time) {
        rows.push(["kernel time", us(n.time.total_s) + " us in " + n.time.count + " call(s)"]);
        rows.push(["share of run", (100 * n.time.share).toFixed(1) + "%"]);
      }
      if (n.members.length) rows.push(["fused operators", n.members.join("; ")]);
      if (n.layers.length) rows.push(["source layers", n.layers.join(", ")]);
      if (n.inputs.length) rows.push(["inputs", n.inputs.map(function (i) { return byId[i] ? byId[i].name : i; }).join(", ")]);
      Object.keys(n.attrs).forEach(function (k) { rows.push([k, n.attrs[k]]); });
      var dl = details.appendChild(el("dl"));
      rows.forEach(function (r) { dl.appendChild(el("dt", null, r[0])); dl.appendChild(el("dd", null, r[1])); });
    }
    canvas.addEventListener("click", function () { highlight(null, null); });

    // pan and zoom
    var state = { k: 1, x: 0, y: 0 };
    function apply() { view.setAttribute("transform", "translate(" + state.x + "," + state.y + ") scale(" + state.k + ")"); }
    function fit() {
      var W = canvas.clientWidth || 1000, H = canvas.clientHeight || 700;
      var k = Math.min(1, W / g.width, H / g.height);
      if (k < 0.3) k = Math.max(0.3, Math.min(1, W / g.width));
      state.k = k;
      state.x = Math.max(0, (W - g.width * k) / 2);
      state.y = g.height * k < H ? (H - g.height * k) / 2 : 0;
      apply();
    }
    function zoomAt(f, cx, cy) {
      var k = Math.min(4, Math.max(0.05, state.k * f));
      state.x = cx - (cx - state.x) * (k / state.k);
      state.y = cy - (cy - state.y) * (k / state.k);
      state.k = k;
      apply();
    }
    canvas.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var r = canvas.getBoundingClientRect();
      zoomAt(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
    var drag = null;
    canvas.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, y: ev.clientY, sx: state.x, sy: state.y }; });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      state.x = drag.sx + ev.clientX - drag.x;
      state.y = drag.sy + ev.clientY - drag.y;
      apply();
    });
    window.addEventListener("mouseup", function () { drag = null; });
    fitButton.addEventListener("click", fit);
    inButton.addEventListener("click", function () { zoomAt(1.25, canvas.clientWidth / 2, canvas.clientHeight / 2); });
    outButton.addEventListener("click", function () { zoomAt(0.8, canvas.clientWidth / 2, canvas.clientHeight / 2); });
    return { fit: fit, select: function (id) { if (byId[id]) select(id); } };
  }

  // ------------------------------------------------------------------ page
  function build(data) {
    var first = null;
    var drawn = 0;
    var views = {};
    data.graphs.forEach(function (g, i) {
      var view = null;
      var pane = addPane("graph-" + i, g.title, function () { if (view) view.fit(); });
      view = views[pane.id] = drawGraph(pane, g, data.kernels);
      drawn += 1;
      if (first === null) first = pane.id;
    });
    root.setAttribute("data-rendered", String(drawn));
    data.stages.forEach(function (s, i) {
      var pane = addPane("ir-" + i, "IR: " + s.name);
      pane.appendChild(el("pre", "ir", s.text));
    });
    var passes = addPane("passes", "Pass timings");
    if (data.passes.length) {
      var total = data.passes.reduce(function (a, r) { return a + r.total_s; }, 0);
      passes.appendChild(table(["Pass", "Calls", "Total (ms)", "Share"],
        data.passes.map(function (r) { return [r.name, r.calls, ms(r.total_s), pct(r.total_s, total)]; }),
        [false, true, true, true]));
      passes.appendChild(el("p", "note", "Shares are of the sum over all passes (nested passes count in their parents too)."));
    } else {
      passes.appendChild(el("p", "note", "No pass timings were recorded."));
    }
    var prof = addPane("profile", "Profile");
    if (data.profile) {
      var p = data.profile;
      var rows = p.rows.map(function (r) {
        return [r.name, r.kind, r.count, us(r.total_s), us(r.count ? r.total_s / r.count : 0), pct(r.total_s, p.total_s)];
      });
      rows.push(["(vm overhead)", "", "", us(p.overhead_s), "", pct(p.overhead_s, p.total_s)]);
      rows.push(["(total)", "", "", us(p.total_s), "", "100.0%"]);
      prof.appendChild(table(["Name", "Kind", "Calls", "Total (us)", "Mean (us)", "Percent"], rows,
        [false, false, true, true, true, true]));
    } else {
      prof.appendChild(el("p", "note", "No profile was given."));
    }
    // a link may name the pane to open and a node to select: #graph-1, #graph-0/n12, #profile
    var wanted = decodeURIComponent(window.location.hash.slice(1)).split("/");
    var known = shown.some(function (t) { return t.pane.id === wanted[0]; });
    show(known ? wanted[0] : (first || (shown.length ? shown[0].pane.id : "")));
    if (known && wanted.length > 1 && views[wanted[0]]) views[wanted[0]].select(wanted[1]);
  }

  try {
    build(JSON.parse(document.getElementById("report-data").textContent));
  } catch (err) {
    recordError((err && err.stack) || err);
  }
})();
