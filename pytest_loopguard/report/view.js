// loopguard's step viewer: reads the JSON block #lg-data and renders it into #lg-view. No network, no libraries.
// Every text of a run goes into the page through textContent, never as markup.
(function () {
  "use strict";
  var ROW = 24;            // px per step row: the list is virtualised, only the rows in view exist
  var SPARE = 10;          // rows drawn above and below the visible ones
  var ACTIONS = ["allow", "warn", "compact", "block", "retry", "compact_retry", "stop", "fail", "not_reached"];
  var root = document.getElementById("lg-view");
  var source = document.getElementById("lg-data");
  if (!root || !source) { return; }
  var data = JSON.parse(source.textContent);
  var runs = data.runs || [];

  var ui = {run: 0, shown: [], action: "", reason: "", differ: false, differSet: {}, visible: [], cursor: 0, selected: null};

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function badge(action) { return el("span", "lg-act lg-" + action, action); }
  function deciding(policy, i) {
    var vs = policy.verdicts[String(i)] || [];
    var act = policy.actions[i];
    for (var k = 0; k < vs.length; k++) { if (vs[k].action === act) { return vs[k]; } }
    return null;
  }

  // ---- layout --------------------------------------------------------------------------------------------
  var side = el("nav", "lg-runs");
  var main = el("div", "lg-main");
  var head = el("div", "lg-head");
  var bar = el("div", "lg-bar");
  var loopsBox = el("div", "lg-loops");
  var strip = el("div", "lg-strip");
  var listWrap = el("div", "lg-listwrap");
  var list = el("div", "lg-list");
  list.tabIndex = 0;
  var spacer = el("div", "lg-spacer");
  var rows = el("div", "lg-rows");
  var detail = el("section", "lg-detail");
  var counter = el("div", "lg-count");
  spacer.appendChild(rows);
  list.appendChild(spacer);
  listWrap.appendChild(counter);
  listWrap.appendChild(list);
  main.appendChild(head);
  main.appendChild(bar);
  main.appendChild(strip);
  main.appendChild(loopsBox);
  main.appendChild(listWrap);
  root.appendChild(side);
  root.appendChild(main);
  root.appendChild(detail);

  function run() { return runs[ui.run]; }

  // ---- the run list ----------------------------------------------------------------------------------------
  function drawRuns() {
    side.textContent = "";
    side.appendChild(el("h2", null, runs.length + (runs.length === 1 ? " run" : " runs")));
    runs.forEach(function (r, i) {
      var item = el("button", "lg-run" + (i === ui.run ? " lg-on" : ""));
      item.type = "button";
      item.dataset.run = String(i);
      item.appendChild(el("span", "lg-runname", r.name));
      r.policies.forEach(function (p) { item.appendChild(el("span", "lg-out lg-o-" + p.outcome, p.outcome)); });
      if (r.differs.length) { item.appendChild(el("span", "lg-differs", "≠ " + r.differs.length)); }
      item.addEventListener("click", function () { openRun(i); });
      side.appendChild(item);
    });
  }

  // ---- the bar: policies shown, filters ---------------------------------------------------------------------
  function drawBar() {
    var r = run();
    bar.textContent = "";
    var pols = el("span", "lg-pols");
    r.policies.forEach(function (p, i) {
      var label = el("label", "lg-pol");
      var box = el("input");
      box.type = "checkbox";
      box.checked = ui.shown.indexOf(i) >= 0;
      box.dataset.policy = p.policy;
      box.addEventListener("change", function () {
        ui.shown = r.policies.map(function (_, k) { return k; }).filter(function (k) {
          return k === i ? box.checked : ui.shown.indexOf(k) >= 0;
        });
        if (!ui.shown.length) { ui.shown = [i]; box.checked = true; }
        refresh();
      });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + p.policy));
      pols.appendChild(label);
    });
    bar.appendChild(pols);

    var action = el("select", "lg-filter-action");
    [["", "every step"], ["interventions", "interventions"]].concat(ACTIONS.map(function (a) { return [a, a]; }))
      .forEach(function (o) { var opt = el("option", null, o[1]); opt.value = o[0]; action.appendChild(opt); });
    action.value = ui.action;
    action.addEventListener("change", function () { ui.action = action.value; refresh(); });
    bar.appendChild(el("span", null, " verdict "));
    bar.appendChild(action);

    var reasons = {};
    r.policies.forEach(function (p) {
      Object.keys(p.verdicts).forEach(function (k) { p.verdicts[k].forEach(function (v) { reasons[v.reason] = 1; }); });
    });
    var reason = el("select", "lg-filter-reason");
    var any = el("option", null, "any reason"); any.value = ""; reason.appendChild(any);
    Object.keys(reasons).sort().forEach(function (code) {
      var opt = el("option", null, code); opt.value = code; reason.appendChild(opt);
    });
    reason.value = ui.reason;
    reason.addEventListener("change", function () { ui.reason = reason.value; refresh(); });
    bar.appendChild(el("span", null, " reason "));
    bar.appendChild(reason);

    if (r.policies.length > 1) {
      var diff = el("label", "lg-differ");
      var box2 = el("input"); box2.type = "checkbox"; box2.checked = ui.differ;
      box2.addEventListener("change", function () { ui.differ = box2.checked; refresh(); });
      diff.appendChild(box2);
      diff.appendChild(document.createTextNode(" differing steps only (" + r.differs.length + ")"));
      bar.appendChild(diff);
    }
    bar.appendChild(el("span", "lg-keys", "j/k or ↑/↓ move · Enter opens · n/p next/previous intervention"));
  }

  function drawHead() {
    var r = run();
    head.textContent = "";
    head.appendChild(el("h2", "lg-title", r.name));
    if (r.file) { head.appendChild(el("code", "lg-file", r.file)); }
    if (r.description) { head.appendChild(el("p", "lg-desc", r.description)); }
    var table = el("table", "lg-outcomes");
    var tr = el("tr");
    ["policy", "outcome", "stopped at", "stopped by", "interventions", "expectations"].forEach(function (h) {
      tr.appendChild(el("th", null, h));
    });
    table.appendChild(tr);
    ui.shown.forEach(function (k) {
      var p = r.policies[k];
      var n = p.actions.filter(function (a) { return a !== "allow" && a !== "not_reached"; }).length;
      var row = el("tr");
      row.appendChild(el("td", null, p.policy));
      var out = el("td"); out.appendChild(el("span", "lg-out lg-o-" + p.outcome, p.outcome)); row.appendChild(out);
      row.appendChild(el("td", null, p.stopped_at === null ? "" : p.stopped_at));
      row.appendChild(el("td", null, p.stopped_by || ""));
      row.appendChild(el("td", null, n));
      row.appendChild(el("td", p.mismatches.length ? "lg-bad" : null,
        p.mismatches.length ? p.mismatches.length + " mismatch(es): " + p.mismatches.join("; ") : "ok"));
      table.appendChild(row);
    });
    head.appendChild(table);
  }

  function drawLoops() {
    var r = run();
    loopsBox.textContent = "";
    ui.shown.forEach(function (k) {
      var p = r.policies[k];
      if (!p.loops.length) { return; }
      var box = el("details", "lg-loopset");
      box.open = p.loops.length <= 5;  // many loops: their count first, the list a click away
      var calls = 0, tokens = 0;
      p.loops.forEach(function (lp) { calls += lp.calls; tokens += lp.tokens; });
      box.appendChild(el("summary", null, p.loops.length + (p.loops.length === 1 ? " loop" : " loops") + " under " +
        p.policy + ": " + calls + " calls, " + tokens.toLocaleString("en") + " tokens"));
      p.loops.forEach(function (lp) {
        var b = el("button", "lg-loop lg-l-" + lp.action);
        b.type = "button";
        b.textContent = "steps " + lp.first + "–" + lp.last + ": " + lp.what + " — " + lp.calls + " calls, " +
          lp.tokens.toLocaleString("en") + " tokens (" + lp.reasons.join(", ") + ")" + (lp.stopped ? " · stopped" : "");
        b.addEventListener("click", function () { select(lp.first, true); });
        box.appendChild(b);
      });
      loopsBox.appendChild(box);
    });
  }

  // ---- the timeline: one column per step and a row per policy, loops as bars under it -------------------------
  var COLOURS = {allow: "#cfe8d5", warn: "#f9c80e", compact: "#8ab4f8", block: "#f08a24", retry: "#8ab4f8",
    compact_retry: "#1a73e8", stop: "#d93025", fail: "#5f0000", not_reached: "#eceff1"};
  function drawStrip() {
    var r = run();
    strip.textContent = "";
    var n = r.steps.length;
    if (!n) { return; }
    ui.shown.forEach(function (k) {
      var p = r.policies[k];
      var line = el("div", "lg-stripline");
      line.appendChild(el("span", "lg-stripname", p.policy));
      var canvas = el("canvas", "lg-timeline");
      canvas.dataset.policy = p.policy;
      var width = Math.max(Math.min(strip.clientWidth - 130, 2000), 200);
      canvas.width = width;
      canvas.height = 26;
      var g = canvas.getContext("2d");
      var per = width / n;
      for (var i = 0; i < n; i++) {  // interventions drawn last, and at least a pixel wide, so none vanishes
        g.fillStyle = COLOURS[p.actions[i]] || "#999";
        g.fillRect(Math.floor(i * per), 0, Math.max(Math.ceil(per), 1), 16);
      }
      for (var j = 0; j < n; j++) {
        var a = p.actions[j];
        // what no verdict says: the agent's own compaction (a dark column), a call that never ran (a grey half)
        if (r.steps[j].compacted && a !== "not_reached") { g.fillStyle = "#333"; g.fillRect(Math.floor(j * per), 0, Math.max(per, 2), 16); }
        if (r.steps[j].not_run) { g.fillStyle = "#9e9e9e"; g.fillRect(Math.floor(j * per), 8, Math.max(per, 2), 8); }
        if (a !== "allow" && a !== "not_reached") { g.fillStyle = COLOURS[a] || "#999"; g.fillRect(Math.floor(j * per), 0, Math.max(per, 2), 16); }
        if (ui.differSet[j]) { g.fillStyle = "#b06000"; g.fillRect(Math.floor(j * per), 0, Math.max(per, 2), 3); }
      }
      p.loops.forEach(function (lp) {
        g.fillStyle = COLOURS[lp.action] || "#999";
        g.fillRect(Math.floor(lp.first * per), 19, Math.max(Math.ceil((lp.last - lp.first + 1) * per), 2), 6);
      });
      canvas.addEventListener("click", function (ev) {
        var box = canvas.getBoundingClientRect();
        var i = Math.min(n - 1, Math.max(0, Math.floor((ev.clientX - box.left) / box.width * n)));
        select(i, true);
      });
      canvas.title = p.policy + ": " + n + " steps; click to open a step";
      line.appendChild(canvas);
      strip.appendChild(line);
    });
  }

  // ---- the filtered, virtualised step list -----------------------------------------------------------------
  function keep(i) {
    var r = run();
    if (ui.differ && !ui.differSet[i]) { return false; }
    if (!ui.action && !ui.reason) { return true; }
    return ui.shown.some(function (k) {
      var p = r.policies[k];
      var act = p.actions[i];
      if (ui.action === "interventions" && (act === "allow" || act === "not_reached")) { return false; }
      if (ui.action && ui.action !== "interventions" && act !== ui.action) { return false; }
      if (ui.reason) {
        var vs = p.verdicts[String(i)] || [];
        return vs.some(function (v) { return v.reason === ui.reason; });
      }
      return true;
    });
  }

  function loopAt(p, i) {
    for (var k = 0; k < p.loops.length; k++) {
      if (p.loops[k].first <= i && i <= p.loops[k].last) { return p.loops[k]; }
    }
    return null;
  }

  function refresh() {
    var r = run();
    var differs = {};
    r.differs.forEach(function (i) { differs[i] = 1; });
    ui.differSet = differs;
    ui.visible = [];
    for (var i = 0; i < r.steps.length; i++) { if (keep(i)) { ui.visible.push(i); } }
    var pos = ui.selected === null ? -1 : ui.visible.indexOf(ui.selected);
    ui.cursor = pos >= 0 ? pos : Math.min(ui.cursor, Math.max(ui.visible.length - 1, 0));
    counter.textContent = ui.visible.length + " of " + r.steps.length + " steps";
    spacer.style.height = (ui.visible.length * ROW) + "px";
    drawHead();
    drawStrip();
    drawLoops();
    drawRows();
    drawDetail();
  }

  function drawRows() {
    var r = run();
    var top = list.scrollTop;
    var first = Math.max(Math.floor(top / ROW) - SPARE, 0);
    var last = Math.min(Math.ceil((top + list.clientHeight) / ROW) + SPARE, ui.visible.length);
    rows.textContent = "";
    rows.style.top = (first * ROW) + "px";
    for (var n = first; n < last; n++) {
      var i = ui.visible[n];
      var s = r.steps[i];
      var row = el("div", "lg-row lg-k-" + s.kind + (s.not_run ? " lg-notrun" : "") + (s.compacted ? " lg-compacted" : "") +
        (n === ui.cursor ? " lg-cursor" : "") +
        (i === ui.selected ? " lg-selected" : "") + (ui.differSet[i] ? " lg-differs-row" : ""));
      row.dataset.index = String(i);
      row.appendChild(el("span", "lg-i", i));
      row.appendChild(el("span", "lg-mark", ui.differSet[i] ? "≠" : ""));
      row.appendChild(el("span", "lg-label", s.label));
      ui.shown.forEach(function (k) {
        var p = r.policies[k];
        var cell = el("span", "lg-cell");
        var lp = loopAt(p, i);
        cell.appendChild(el("span", "lg-loopbar" + (lp ? " lg-l-" + lp.action : ""), ""));
        cell.appendChild(badge(p.actions[i]));
        var v = deciding(p, i);
        cell.appendChild(el("span", "lg-reason", v ? v.reason : ""));
        row.appendChild(cell);
      });
      row.addEventListener("click", onRowClick);
      rows.appendChild(row);
    }
  }

  function onRowClick(ev) {
    var i = Number(ev.currentTarget.dataset.index);
    ui.cursor = ui.visible.indexOf(i);
    select(i, false);
    list.focus();
  }

  function scrollTo(n) {
    var y = n * ROW;
    if (y < list.scrollTop) { list.scrollTop = y; }
    else if (y + ROW > list.scrollTop + list.clientHeight) { list.scrollTop = y + ROW - list.clientHeight; }
  }

  function moveCursor(n) {
    if (!ui.visible.length) { return; }
    ui.cursor = Math.max(0, Math.min(ui.visible.length - 1, n));
    scrollTo(ui.cursor);
    drawRows();
  }

  // ---- the selected step ------------------------------------------------------------------------------------
  function select(i, scroll) {
    ui.selected = i;
    var n = ui.visible.indexOf(i);
    if (n < 0 && scroll) {  // a loop's first step hidden by a filter: show every step again
      ui.action = ""; ui.reason = ""; ui.differ = false; drawBar(); refresh(); n = ui.visible.indexOf(i);
    }
    if (n >= 0) { ui.cursor = n; if (scroll) { scrollTo(n); } }
    drawRows();
    drawDetail();
  }

  function field(dl, name, value, cls) {
    if (value === undefined || value === null || value === "") { return; }
    dl.appendChild(el("dt", null, name));
    var dd = el("dd", cls || null);
    if (typeof value === "object") { dd.appendChild(el("pre", null, JSON.stringify(value, null, 2))); }
    else { dd.textContent = String(value); }
    dl.appendChild(dd);
  }

  function drawDetail() {
    var r = run();
    detail.textContent = "";
    if (ui.selected === null) { detail.appendChild(el("p", "lg-hint", "Click a step (or press Enter) to read it.")); return; }
    var s = r.steps[ui.selected];
    detail.dataset.index = String(ui.selected);
    detail.appendChild(el("h3", null, "step " + s.index + (s.kind ? " · " + s.kind : "") + (s.tool ? " · " + s.tool : "")));
    var dl = el("dl", "lg-fields");
    field(dl, "call", s.tool);
    if (s.args !== undefined) {
      dl.appendChild(el("dt", null, "arguments"));
      var dd = el("dd"); dd.appendChild(el("pre", "lg-args", s.args)); dl.appendChild(dd);
    }
    field(dl, "identity", s.identity, "lg-identity");
    if (s.ok !== undefined) { field(dl, "result", s.ok ? "ok" : "error" + (s.exit_code !== undefined ? " (exit " + s.exit_code + ")" : "")); }
    if (s.result !== undefined && s.result !== null) {
      dl.appendChild(el("dt", null, "output"));
      var out = el("dd"); out.appendChild(el("pre", "lg-result", s.result)); dl.appendChild(out);
    }
    field(dl, "error", s.error, "lg-error");
    field(dl, "result tokens", s.result_tokens);
    field(dl, "model tokens", s.tokens);
    field(dl, "role", s.role);
    field(dl, "text", s.text, "lg-text");
    field(dl, "never ran", s.not_run);
    field(dl, "compacted by the agent", s.compacted && !Object.keys(s.compacted).length ? "yes" : s.compacted);
    field(dl, "t (ms)", s.t);
    detail.appendChild(dl);
    ui.shown.forEach(function (k) {
      var p = r.policies[k];
      var box = el("div", "lg-policy");
      box.dataset.policy = p.policy;
      var h = el("h4", null, p.policy + " → ");
      h.appendChild(badge(p.actions[s.index]));
      box.appendChild(h);
      var vs = p.verdicts[String(s.index)] || [];
      if (!vs.length) {
        box.appendChild(el("p", "lg-none", p.actions[s.index] === "not_reached" ? "the run had ended before this step" : "no verdict"));
      }
      vs.forEach(function (v) {
        var vb = el("div", "lg-verdict");
        vb.dataset.engine = v.engine;
        var line = el("div");
        line.appendChild(el("span", "lg-engine", v.engine));
        line.appendChild(badge(v.action));
        line.appendChild(el("code", "lg-vreason", v.reason));
        vb.appendChild(line);
        vb.appendChild(el("p", "lg-message", v.message));
        if (v.data && Object.keys(v.data).length) { vb.appendChild(el("pre", "lg-data", JSON.stringify(v.data, null, 2))); }
        box.appendChild(vb);
      });
      var st = p.state[String(s.index)];
      if (st) {
        box.appendChild(el("div", "lg-statehead", "engine state after this step"));
        Object.keys(st).forEach(function (name) {
          var sb = el("div", "lg-state");
          sb.dataset.engine = name;
          sb.appendChild(el("span", "lg-engine", name));
          Object.keys(st[name]).forEach(function (key) {
            var value = st[name][key];
            sb.appendChild(el("span", "lg-kv", key + ": " + (typeof value === "object" && value !== null ? JSON.stringify(value) : String(value))));
          });
          box.appendChild(sb);
        });
      }
      var lp = loopAt(p, s.index);
      if (lp) {
        box.appendChild(el("p", "lg-inloop", "in a loop, steps " + lp.first + "–" + lp.last + ": " + lp.what +
          " (" + lp.calls + " calls, " + lp.tokens.toLocaleString("en") + " tokens)"));
      }
      detail.appendChild(box);
    });
  }

  // ---- keys -------------------------------------------------------------------------------------------------
  function nextIntervention(step) {
    var r = run();
    for (var n = ui.cursor + step; n >= 0 && n < ui.visible.length; n += step) {
      var i = ui.visible[n];
      if (ui.shown.some(function (k) { var a = r.policies[k].actions[i]; return a !== "allow" && a !== "not_reached"; })) {
        return n;
      }
    }
    return ui.cursor;
  }

  document.addEventListener("keydown", function (ev) {
    var tag = ev.target && ev.target.tagName;
    if (tag === "SELECT" || tag === "INPUT" || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var key = ev.key;
    if (key === "j" || key === "ArrowDown") { moveCursor(ui.cursor + 1); }
    else if (key === "k" || key === "ArrowUp") { moveCursor(ui.cursor - 1); }
    else if (key === "PageDown") { moveCursor(ui.cursor + Math.floor(list.clientHeight / ROW)); }
    else if (key === "PageUp") { moveCursor(ui.cursor - Math.floor(list.clientHeight / ROW)); }
    else if (key === "Home") { moveCursor(0); }
    else if (key === "End") { moveCursor(ui.visible.length - 1); }
    else if (key === "n") { moveCursor(nextIntervention(1)); }
    else if (key === "p") { moveCursor(nextIntervention(-1)); }
    else if (key === "Enter") { if (ui.visible.length) { select(ui.visible[ui.cursor], true); } }
    else { return; }
    ev.preventDefault();
  });
  list.addEventListener("scroll", function () { drawRows(); });
  window.addEventListener("resize", function () { drawRows(); });

  function openRun(i) {
    ui.run = i;
    ui.shown = runs[i].policies.map(function (_, k) { return k; });
    ui.cursor = 0;
    ui.selected = null;
    list.scrollTop = 0;
    drawRuns();
    drawBar();
    refresh();
    drawDetail();
  }

  if (runs.length) {
    var wanted = /[#&]run=(\d+)/.exec(window.location.hash);
    openRun(wanted && Number(wanted[1]) < runs.length ? Number(wanted[1]) : 0);
  } else {
    root.appendChild(el("p", null, "no runs"));
  }
  root.dataset.ready = "1";
})();
