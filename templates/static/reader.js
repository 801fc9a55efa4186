// Loaded on demand by site.js: search across sheets, the compare view, runnable scripts.
// Data comes from files the build wrote (search-index.js, data/<sheet>.runnable.js); nothing
// is requested from another server.
(function () {
  "use strict";
  var hpg = window.hpg;
  var MAX_RESULTS = 12;

  function index() { return hpg.get("search", "search-index.js"); }
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function leaf(name) { return name.slice(name.lastIndexOf(".") + 1); }

  // ---- Search ------------------------------------------------------------------------------
  // Every term must match the row somewhere. A term scores most in an API name whose last part
  // it is (vmap), then in an API name or shown name containing it (nnx.Conv), then in the text
  // of a cell; a term in the row's title adds to that (whole word more); failing all of these,
  // its section or its sheet.
  function rank(data, query) {
    var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!terms.length) return [];
    var found = [];
    data.rows.forEach(function (row, order) {
      var sheet = data.sheets[row[0]];
      var total = 0, where = null;
      for (var t = 0; t < terms.length; t++) {
        var term = terms[t], best = 0, bestWhere = null;
        var title = row[2].toLowerCase(), inTitle = 0;
        if (title.indexOf(term) >= 0) inTitle = new RegExp("(^|\\W)" + term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "(\\W|$)").test(title) ? 4 : 3;
        row[4].forEach(function (cell) {
          var api = cell[2], words = cell[3];
          for (var i = 0; i < api.length; i++) {
            var name = api[i].toLowerCase();
            var score = leaf(name) === term ? 6 : name.indexOf(term) >= 0 ? 5 : 0;
            if (score > best) { best = score; bestWhere = [cell[0], api[i]]; }
          }
          for (var j = 0; j < words.length; j++) {
            var word = words[j].toLowerCase();
            var s = cell[1] === "t" ? 1 : leaf(word) === term ? 5 : 2;
            if (word.indexOf(term) >= 0 && s > best) { best = s; bestWhere = [cell[0], cell[1] === "t" ? "" : words[j]]; }
          }
        });
        best += inTitle;
        if (!best && row[3].toLowerCase().indexOf(term) >= 0) best = 1;
        if (!best && sheet.title.toLowerCase().indexOf(term) >= 0) best = 0.5;
        if (!best) return;
        total += best;
        if (bestWhere && !where) where = bestWhere;
      }
      found.push({ score: total, order: order, row: row, sheet: sheet, where: where });
    });
    found.sort(function (a, b) { return b.score - a.score || a.order - b.order; });
    return found;
  }

  function search(box) {
    if (box.getAttribute("data-ready")) return;
    box.setAttribute("data-ready", "loading");
    var input = box.querySelector("input");
    var status = box.querySelector(".search-status");
    var list = box.querySelector(".search-results");
    var started = window.performance ? performance.now() : 0;
    index().then(function (data) {
      box.setAttribute("data-ready", "yes");
      box.setAttribute("data-load-ms", String(Math.round((window.performance ? performance.now() : 0) - started)));
      function show() {
        var results = rank(data, input.value);
        list.textContent = "";
        results.slice(0, MAX_RESULTS).forEach(function (hit) {
          var item = el("li");
          var link = el("a");
          link.href = (hit.row[5] || hit.sheet.id) + ".html#" + encodeURIComponent(hit.row[1]);
          link.appendChild(el("span", "hit-title", hit.row[2]));
          var where = hit.sheet.title + " › " + hit.row[3];
          if (hit.where) where += " · " + hit.sheet.columns[hit.where[0]][1] + (hit.where[1] ? ": " + hit.where[1] : "");
          link.appendChild(el("span", "hit-where", where));
          item.appendChild(link);
          list.appendChild(item);
        });
        list.hidden = !input.value.trim();
        if (!input.value.trim()) { status.textContent = ""; return; }
        status.textContent = results.length ? (results.length > MAX_RESULTS ? "First " + MAX_RESULTS + " of " + results.length : results.length) + " row" + (results.length === 1 ? "" : "s") + " in all sheets" : "No row in any sheet matches.";
        if (!results.length) list.hidden = true;
      }
      input.addEventListener("input", show);
      input.addEventListener("keydown", function (event) {
        if (event.key === "Escape") { input.value = ""; show(); }
        else if (event.key === "ArrowDown" && list.firstChild) { event.preventDefault(); list.querySelector("a").focus(); }
        else if (event.key === "Enter" && list.firstChild) { event.preventDefault(); list.querySelector("a").click(); }
      });
      list.addEventListener("keydown", function (event) {
        var links = Array.prototype.slice.call(list.querySelectorAll("a"));
        var at = links.indexOf(document.activeElement);
        if (event.key === "ArrowDown" && at < links.length - 1) { event.preventDefault(); links[at + 1].focus(); }
        else if (event.key === "ArrowUp") { event.preventDefault(); (at > 0 ? links[at - 1] : input).focus(); }
        else if (event.key === "Escape") { input.focus(); input.value = ""; show(); }
      });
      // A hit on this very page: the hash changes, site.js reveals the row; close the list.
      list.addEventListener("click", function () { window.setTimeout(function () { list.hidden = true; }, 0); });
      show();
    }, function () {
      // No index (a copy without it, a blocked request): this page's own filter still works.
      box.setAttribute("data-ready", "failed");
      box.classList.add("search-failed");
      var sheet = hpg.sheet;
      status.textContent = sheet
        ? "The search index could not load, so this box filters this page's rows only."
        : "The search index could not load: open a sheet and use its row filter.";
      if (sheet) {
        var forward = function () { sheet.filter.value = input.value; sheet.refilter(); };
        input.addEventListener("input", forward);
        forward();
      }
    });
  }

  // ---- Runnable scripts ----------------------------------------------------------------------
  function runnable(files, rowId, column) {
    return hpg.get("runnable/" + files, "data/" + files + ".runnable.js").then(function (data) {
      if (rowId === undefined) return "";
      var text = data[rowId] && data[rowId][column];
      if (!text) throw new Error("no runnable script for " + rowId + " " + column);
      return text;
    });
  }

  // ---- Compare two columns ----------------------------------------------------------------------
  // Two cells are "the same" when they are of one kind and: code calling the same API names
  // (their last parts: torch.ones and jnp.ones agree), or equal code when neither calls an API;
  // text saying the same. A row a column lacks (a "none" cell) shows only when asked.
  function signature(cell) {
    if (!cell) return null;
    if (cell[1] === "c") {
      if (cell[4]) return "c" + cell[4];
      var leaves = {};
      cell[2].forEach(function (name) { leaves[leaf(name)] = true; });
      return "c" + Object.keys(leaves).sort().join(" ");
    }
    if (cell[1] === "t") return "t" + cell[3][0].trim().replace(/\s+/g, " ").toLowerCase();
    return "n";
  }

  function compare() {
    var sheet = hpg.sheet;
    if (!sheet || sheet.controls.querySelector(".compare")) return;
    var params = new URLSearchParams(window.location.search);
    var wanted = (params.get("compare") || "").split(",");
    var box = el("fieldset", "compare");
    box.appendChild(el("legend", "", "Compare two columns"));
    var selects = [0, 1].map(function (i) {
      var label = el("label", "", i ? "with " : "");
      var select = el("select");
      select.name = "compare-" + "ab"[i];
      select.appendChild(el("option", "", "—")).value = "";
      sheet.columns.forEach(function (id) { var o = el("option", "", sheet.names[id]); o.value = id; select.appendChild(o); });
      select.value = sheet.columns.indexOf(wanted[i]) >= 0 ? wanted[i] : "";
      label.appendChild(el("span", "vh", i ? "Second column" : "First column"));
      label.appendChild(select);
      box.appendChild(label);
      return select;
    });
    function check(name, text, on) {
      var label = el("label");
      var input = el("input");
      input.type = "checkbox";
      input.name = name;
      input.checked = on;
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + text));
      box.appendChild(label);
      return input;
    }
    var diff = check("diff", "Differences only", params.get("diff") === "1");
    var lacking = check("lacking", "Rows one of them lacks", params.get("lacking") === "1");
    var off = el("button", "compare-off", "Stop comparing");
    off.type = "button";
    box.appendChild(off);
    var note = el("p", "compare-note");
    note.setAttribute("role", "status");
    box.appendChild(note);
    sheet.controls.appendChild(box);
    var missing = wanted.filter(function (id) { return id && sheet.columns.indexOf(id) < 0; });
    var cells = null; // row id -> {column id: index cell}

    function state() { return [selects[0].value, selects[1].value]; }
    function active() { var s = state(); return s[0] && s[1] && s[0] !== s[1]; }
    function writeUrl() {
      var p = new URLSearchParams(window.location.search);
      ["compare", "diff", "lacking"].forEach(function (k) { p.delete(k); });
      var s = state();
      if (s[0] || s[1]) p.set("compare", s.join(","));
      if (diff.checked) p.set("diff", "1");
      if (lacking.checked) p.set("lacking", "1");
      var query = p.toString().replace(/%2C/g, ",");
      try { window.history.replaceState(window.history.state, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash); } catch (e) { /* file:// may refuse */ }
      carry(query);
    }
    // The other sheets open in the same comparison: the header's links carry it.
    function carry(query) {
      var keep = new URLSearchParams(query);
      ["cols"].forEach(function (k) { keep.delete(k); });
      var suffix = keep.toString().replace(/%2C/g, ",");
      Array.prototype.forEach.call(document.querySelectorAll(".site-header nav a"), function (a) {
        var href = a.getAttribute("href").split("?")[0];
        if (!a.hasAttribute("data-sheet")) return;
        a.setAttribute("href", href + (suffix && active() ? "?" + suffix : ""));
      });
    }
    function keep(row) {
      if (!cells || !active()) return true;
      var s = state(), byCol = cells[row.id] || {};
      var a = byCol[s[0]], b = byCol[s[1]];
      var lacks = !a || !b || a[1] === "n" || b[1] === "n";
      if (lacks) return lacking.checked;
      return !diff.checked || signature(a) !== signature(b);
    }
    function apply() {
      if (active()) {
        var s = state();
        sheet.choose(sheet.columns.filter(function (id) { return id === s[0] || id === s[1]; }));
        hpg.keep = keep;
      } else {
        hpg.keep = null;
        sheet.chooseAll();
      }
      sheet.refilter();
      var shown = sheet.table.querySelectorAll("tr.row:not([hidden])").length;
      var all = sheet.table.querySelectorAll("tr.row").length;
      note.textContent = missing.length
        ? "This sheet has no " + missing.join(" or ") + " column: pick two of its own."
        : active() ? shown + " of " + all + " rows shown" + (diff.checked ? ", differences only" : "") + (lacking.checked ? "" : "; rows one of them lacks are hidden") + "." : "Pick two columns.";
    }
    function changed() { missing = []; writeUrl(); apply(); }
    selects.concat([diff, lacking]).forEach(function (input) { input.addEventListener("change", changed); });
    off.addEventListener("click", function () {
      selects[0].value = selects[1].value = "";
      diff.checked = lacking.checked = false;
      changed();
    });
    apply();
    index().then(function (data) {
      cells = {};
      var sIndex = data.sheets.map(function (s) { return s.id; }).indexOf(sheet.id);
      var columns = sIndex >= 0 ? data.sheets[sIndex].columns : [];
      data.rows.forEach(function (row) {
        if (row[0] !== sIndex) return;
        var byCol = cells[row[1]] = {};
        row[4].forEach(function (cell) { byCol[columns[cell[0]][0]] = cell; });
      });
      writeUrl();
      apply();
      box.setAttribute("data-ready", "yes");
    }, function () {
      note.textContent = "The search index could not load, so differences cannot be told apart; both columns show every row.";
      box.setAttribute("data-ready", "failed");
    });
  }

  hpg.readerApi = { search: search, compare: compare, runnable: runnable, rank: rank };
})();
