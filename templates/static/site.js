// Progressive enhancement only: every page reads fully without this script.
// No inline handlers, no eval, no requests: it only rearranges what the page already holds.
(function () {
  "use strict";

  var root = document.documentElement;
  root.classList.add("js"); // the style sheet tells a page with scripts from one without

  // ---- Loading on demand (static/reader.js, the search index, runnable scripts): script files,
  // which load over http(s) and from file:// alike; each data file calls hpg.receive(name, data).
  var hpg = window.hpg = window.hpg || {};
  var me = document.currentScript;
  var loading = {};
  hpg.data = hpg.data || {};
  hpg.build = me ? me.getAttribute("data-build") || "" : "";
  hpg.readerSrc = me ? me.getAttribute("data-reader") || "" : "";
  hpg.receive = function (name, data) { hpg.data[name] = data; };
  hpg.load = function (src) {
    if (!loading[src]) {
      loading[src] = new Promise(function (resolve, reject) {
        var tag = document.createElement("script");
        tag.src = src;
        tag.onload = resolve;
        tag.onerror = function () { delete loading[src]; reject(new Error("could not load " + src)); };
        document.head.appendChild(tag);
      });
    }
    return loading[src];
  };
  hpg.get = function (name, src) {
    return hpg.load(src + (hpg.build ? "?v=" + hpg.build : "")).then(function () {
      if (!hpg.data[name]) throw new Error(src + " did not hold " + name);
      return hpg.data[name];
    });
  };
  hpg.reader = function () {
    return hpg.load(hpg.readerSrc).then(function () { return hpg.readerApi; });
  };
  var THEME_KEY = "theme";
  var systemDark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  // ---- Theme: applied the moment this script runs, before the page is shown. ----
  function storedTheme() {
    try { return window.localStorage.getItem(THEME_KEY); } catch (e) { return null; }
  }
  function storeTheme(value) {
    try {
      if (value) window.localStorage.setItem(THEME_KEY, value);
      else window.localStorage.removeItem(THEME_KEY);
    } catch (e) { /* storage refused (private mode, file://): the choice lasts for this page */ }
  }
  function applyTheme(value) {
    if (value === "light" || value === "dark") root.setAttribute("data-theme", value);
    else root.removeAttribute("data-theme");
  }
  function systemTheme() { return systemDark && systemDark.matches ? "dark" : "light"; }
  function currentTheme() { return root.getAttribute("data-theme") || systemTheme(); }
  applyTheme(storedTheme());

  // ---- A sheet's columns, chosen the moment this script runs, before the page is shown: from the
  // URL (?cols=…, or the two of ?compare=…), as classes on <html> by which the style sheet hides
  // columns (hide-col-ID) and sizes the table (ncols-N). So nothing moves when the page has loaded,
  // and print shows the columns chosen. A comparison carried from a sheet that names its columns
  // otherwise maps them by what they run (data-families: JAX / Flax is JAX + Flax NNX here).
  var sheetColumns = me ? (me.getAttribute("data-columns") || "").split(" ").filter(Boolean) : [];
  var families = {};
  (me ? me.getAttribute("data-families") || "" : "").split(" ").forEach(function (pair) {
    var at = pair.indexOf(":");
    if (at > 0 && !families[pair.slice(0, at)]) families[pair.slice(0, at)] = pair.slice(at + 1);
  });
  hpg.columnsOfSheet = sheetColumns;
  // The column of this sheet that stands for column `id` (of this sheet or another), '' when none does.
  hpg.mapColumn = function (id, taken) {
    if (sheetColumns.indexOf(id) >= 0) return id;
    var family = families[id];
    var same = sheetColumns.filter(function (c) { return family && families[c] === family && (taken || []).indexOf(c) < 0; });
    return same[0] || "";
  };
  // The two columns ?compare= names, mapped to this sheet's; null when it names no two.
  hpg.compared = function (search) {
    var wanted = (new URLSearchParams(search).get("compare") || "").split(",");
    var a = wanted[0] ? hpg.mapColumn(wanted[0]) : "";
    var b = wanted[1] ? hpg.mapColumn(wanted[1], [a]) : "";
    return a && b && a !== b ? [a, b] : null;
  };
  hpg.colsFromUrl = function (search) {
    var params = new URLSearchParams(search);
    if (!params.has("cols")) return sheetColumns.slice();
    var wanted = params.get("cols").split(",").map(function (s) { return s.trim(); }).filter(Boolean);
    var known = sheetColumns.filter(function (id) { return wanted.indexOf(id) >= 0; });
    return known.length || !wanted.length ? known : sheetColumns.slice();
  };
  hpg.showColumns = function (visible) {
    var classes = root.className.split(/\s+/).filter(function (c) { return c && !/^(hide-col-|ncols-)/.test(c); });
    sheetColumns.forEach(function (id) { if (visible.indexOf(id) < 0) classes.push("hide-col-" + id); });
    classes.push("ncols-" + visible.length);
    root.className = classes.join(" ");
  };
  if (sheetColumns.length) {
    var compared = hpg.compared(window.location.search);
    if (new URLSearchParams(window.location.search).has("compare")) root.classList.add("comparing");
    hpg.showColumns(compared || hpg.colsFromUrl(window.location.search));
  }

  function ready(fn) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn);
    else fn();
  }

  function announcer() {
    var el = document.getElementById("announce");
    if (!el) {
      el = document.createElement("div");
      el.id = "announce";
      el.className = "vh";
      el.setAttribute("role", "status");
      document.body.appendChild(el);
    }
    return el;
  }

  // The toggle flips the shown theme. Choosing the system's own theme forgets the choice, so the
  // page follows the system again; choosing the other one is remembered in localStorage.
  function initThemeToggle() {
    var button = document.querySelector(".theme-toggle");
    if (!button) return;
    function sync() { button.setAttribute("aria-pressed", String(currentTheme() === "dark")); }
    button.hidden = false;
    sync();
    button.addEventListener("click", function () {
      var next = currentTheme() === "dark" ? "light" : "dark";
      var remembered = next === systemTheme() ? null : next;
      storeTheme(remembered);
      applyTheme(remembered);
      sync();
    });
    if (systemDark && systemDark.addEventListener) systemDark.addEventListener("change", sync);
    window.addEventListener("storage", function (event) {
      if (event.key === THEME_KEY) { applyTheme(event.newValue); sync(); }
    });
  }

  // ---- Sheet pages: choose columns, find a row, copy code. ----
  function initSheet() {
    var table = document.getElementById("sheet");
    var controls = document.querySelector(".controls");
    if (!table || !controls) return;
    // A sheet split into pages: a link to a row or section that is on another page of it goes there,
    // and moving between its pages keeps the chosen columns and comparison (the query).
    var partLinks = Array.prototype.slice.call(document.querySelectorAll("nav.parts a[data-rows]"));
    var wantedId = decodeURIComponent(window.location.hash.slice(1));
    if (wantedId && !document.getElementById(wantedId)) {
      var home = partLinks.filter(function (a) { return a.getAttribute("data-rows").split(" ").indexOf(wantedId) >= 0; })[0];
      if (home) { window.location.replace(home.getAttribute("href") + window.location.search + window.location.hash); return; }
    }
    partLinks.forEach(function (a) {
      a.addEventListener("click", function () { a.setAttribute("href", a.getAttribute("href").split("?")[0] + window.location.search); });
    });
    var boxes = Array.prototype.slice.call(controls.querySelectorAll("input[name=col]"));
    var allColumns = boxes.map(function (box) { return box.value; });
    var names = {};
    boxes.forEach(function (box) { names[box.value] = box.parentNode.textContent.trim(); });
    var chosen = hpg.compared(window.location.search) || hpg.colsFromUrl(window.location.search);

    function layout(visible) {
      hpg.showColumns(visible);
      var headers = table.querySelectorAll(".section-header th");
      for (var j = 0; j < headers.length; j++) headers[j].colSpan = visible.length + 1;
    }

    function writeUrl(visible) {
      var params = new URLSearchParams(window.location.search);
      params.delete("cols");
      var query = params.toString();
      if (visible.length !== allColumns.length) query += (query ? "&" : "") + "cols=" + visible.map(encodeURIComponent).join(",");
      try {
        window.history.replaceState(window.history.state, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash);
      } catch (e) { /* some file:// contexts refuse; the view still changes */ }
    }

    function choose(visible, updateUrl) {
      chosen = visible;
      boxes.forEach(function (box) { box.checked = visible.indexOf(box.value) >= 0; });
      layout(visible);
      if (updateUrl) writeUrl(visible);
    }

    controls.addEventListener("change", function (event) {
      if (event.target.name !== "col") return;
      choose(boxes.filter(function (box) { return box.checked; }).map(function (box) { return box.value; }), true);
    });
    controls.querySelector(".show-all").addEventListener("click", function () { choose(allColumns.slice(), true); });
    choose(chosen, false);

    // The filter: every word must occur in the row's title, code, text or note.
    var input = document.getElementById("filter");
    var status = document.getElementById("filter-status");
    var noMatch = document.querySelector(".no-match");
    var rows = Array.prototype.slice.call(table.querySelectorAll("tr.row"));
    var sections = Array.prototype.slice.call(table.querySelectorAll("tbody.section"));
    var notes = {};
    Array.prototype.forEach.call(document.querySelectorAll(".note[data-row]"), function (note) {
      notes[note.getAttribute("data-row")] = note;
    });
    var notesSection = document.querySelector(".note") ? document.querySelector(".note").parentNode : null;
    var haystacks = rows.map(function (row) {
      var parts = [row.querySelector(".row-title").firstChild.nodeValue || ""];
      Array.prototype.forEach.call(row.querySelectorAll("pre.code, .kind-text p, .none-reason"), function (el) {
        parts.push(el.textContent);
      });
      if (notes[row.id]) parts.push(notes[row.id].textContent);
      return parts.join("\n").toLowerCase();
    });
    var statusTimer = null;

    function applyFilter() {
      var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var count = 0;
      rows.forEach(function (row, i) {
        var match = terms.every(function (term) { return haystacks[i].indexOf(term) >= 0; }) && (!hpg.keep || hpg.keep(row));
        row.hidden = !match;
        if (notes[row.id]) notes[row.id].hidden = !match;
        if (match) count++;
      });
      sections.forEach(function (section) { section.hidden = !section.querySelector("tr.row:not([hidden])"); });
      if (notesSection) notesSection.hidden = !notesSection.querySelector(".note:not([hidden])");
      noMatch.hidden = count > 0;
      window.clearTimeout(statusTimer);
      var text = terms.length || hpg.keep ? count + " of " + rows.length + " rows " + (terms.length ? "match" : "shown") : "";
      statusTimer = window.setTimeout(function () { status.textContent = text; }, terms.length ? 250 : 0);
    }
    input.addEventListener("input", applyFilter);
    input.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && input.value) {
        input.value = "";
        applyFilter();
        event.preventDefault();
      }
    });
    if (input.value) applyFilter(); // a value the browser restored on going back
    document.addEventListener("keydown", function (event) {
      if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
      var target = event.target;
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
      event.preventDefault();
      input.focus();
      input.select();
    });

    // A permalink to a row the filter hides clears the filter first.
    function revealTarget() {
      var id = decodeURIComponent(window.location.hash.slice(1));
      var target = id && document.getElementById(id);
      if (!target) return;
      if (target.hidden || target.closest("[hidden]")) {
        input.value = "";
        applyFilter();
        target.scrollIntoView();
      }
    }
    window.addEventListener("hashchange", revealTarget);
    if (window.location.hash && chosen.length !== allColumns.length) {
      // Hiding columns moved the rows: go back to the linked one.
      var linked = document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
      if (linked) linked.scrollIntoView();
    }

    hpg.sheet = {
      id: table.getAttribute("data-sheet"),
      // the files of this page (data/<files>.runs.js…): the sheet's id, or its page's for a sheet split into pages
      files: table.getAttribute("data-files") || table.getAttribute("data-sheet"),
      table: table, controls: controls, columns: allColumns, names: names, filter: input,
      choose: function (visible) { choose(visible, false); },
      chooseAll: function () { choose(hpg.colsFromUrl(window.location.search), false); },
      refilter: applyFilter
    };
    // Loaded when opened (<details data-lazy=KIND>, only a summary in the page): a badge's runs
    // from data/<sheet>.runs.js, the "Not this" snippets from data/<sheet>.not-this.js.
    table.addEventListener("toggle", function (event) {
      var details = event.target;
      var kind = details.getAttribute && details.getAttribute("data-lazy");
      if (!details.open || !kind || details.getAttribute("data-loaded")) return;
      var td = details.closest("td");
      details.setAttribute("data-loaded", "loading");
      hpg.get(kind + "/" + hpg.sheet.files, "data/" + hpg.sheet.files + "." + kind + ".js").then(function (data) {
        var html = (data[td.parentNode.id] || {})[td.getAttribute("data-col")];
        if (!html) throw new Error("nothing for " + td.parentNode.id + " " + td.getAttribute("data-col"));
        details.insertAdjacentHTML("beforeend", html);
        details.setAttribute("data-loaded", "yes");
      }).catch(function () {
        var note = document.createElement("p");
        note.className = "lazy";
        note.innerHTML = 'These details could not load: see the <a href="verification.html">verification report</a> and <a href="data/' + encodeURIComponent(hpg.sheet.id) + '.json">this sheet\'s data</a>.';
        details.appendChild(note);
        details.setAttribute("data-loaded", "failed");
      });
    }, true);
    // Compare two columns: its code loads when asked for, or when the URL holds a comparison. Its
    // controls are in the page (shown by the class "comparing"): nothing moves when it starts.
    var compareOpen = controls.querySelector(".compare-open");
    function startCompare() { return hpg.reader().then(function (api) { root.classList.add("comparing"); api.compare(); }); }
    compareOpen.addEventListener("click", function () { startCompare().then(function () { controls.querySelector(".compare select").focus(); }); });
    if (new URLSearchParams(window.location.search).has("compare")) startCompare();

    // Copy buttons (in the page): the code shown, and (loaded on demand) the code as a runnable
    // script. Their accessible names say which cell; the visible label is what changes on copying.
    Array.prototype.forEach.call(table.querySelectorAll("td.kind-code .copies"), function (place) {
      var cell = place.closest("td");
      var title = titleText(cell.parentNode.querySelector(".row-title"));
      var column = names[cell.getAttribute("data-col")] || "";
      [["copy", "Copy", " code: "], ["copy-run", "Copy runnable", " code as a script with its setup: "]].forEach(function (kind) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = kind[0];
        var label = document.createElement("span");
        label.className = "copy-label";
        label.textContent = kind[1];
        var detail = document.createElement("span");
        detail.className = "vh";
        detail.textContent = " " + column + kind[2] + title;
        button.appendChild(label);
        button.appendChild(detail);
        place.appendChild(button);
      });
    });
    roving(table);
    // The script comes from data/<sheet>.runnable.js: fetched when the pointer or focus nears.
    table.addEventListener("pointerover", function (event) {
      if (event.target.closest && event.target.closest("button.copy-run")) hpg.reader().then(function (api) { api.runnable(hpg.sheet.files); });
    });
    table.addEventListener("click", function (event) {
      var button = event.target.closest ? event.target.closest("button.copy, button.copy-run") : null;
      if (!button) return;
      var pre = button.closest("td").querySelector("pre.code");
      var label = button.querySelector(".copy-label");
      var idle = label.textContent;
      var text = pre.textContent;
      var runnable = button.classList.contains("copy-run");
      if (runnable) {
        var td = button.closest("td");
        text = hpg.reader().then(function (api) { return api.runnable(hpg.sheet.files, td.parentNode.id, td.getAttribute("data-col")); });
      }
      copyText(text).then(function () {
        label.textContent = "Copied";
        button.classList.add("copied");
        announcer().textContent = "Copied" + button.querySelector(".vh").textContent;
      }, function () {
        if (runnable) { label.textContent = "Could not copy"; return; }
        selectText(pre);
        label.textContent = "Press Ctrl+C";
      }).then(function () {
        window.setTimeout(function () { label.textContent = idle; button.classList.remove("copied"); }, 1600);
      });
    });
  }

  // A row's title as a reader reads it: its text and code, without the links after it.
  function titleText(th) {
    var out = "";
    for (var node = th ? th.firstChild : null; node; node = node.nextSibling) {
      if (node.nodeType === 3) out += node.nodeValue;
      else if (node.nodeName === "CODE") out += node.textContent;
      else break;
    }
    return out.trim();
  }

  // One tab stop per cell: Tab moves from cell to cell (to the control last used in each), the
  // arrow keys move among a cell's controls (badge, output, copy buttons, "Not this", links), Home
  // and End to its first and last. A scrollable output keeps its own tab stop.
  function roving(table) {
    var SELECTOR = "summary, button, a[href], input, select";
    function controlsOf(cell) {
      return Array.prototype.filter.call(cell.querySelectorAll(SELECTOR), function (el) { return el.getClientRects().length > 0 && !el.closest("details:not([open]) > :not(summary)"); });
    }
    Array.prototype.forEach.call(table.querySelectorAll("td.cell, th.row-title"), function (cell) {
      Array.prototype.forEach.call(cell.querySelectorAll(SELECTOR), function (el, i) { el.tabIndex = i ? -1 : 0; });
    });
    table.addEventListener("keydown", function (event) {
      var key = event.key;
      if (["ArrowDown", "ArrowRight", "ArrowUp", "ArrowLeft", "Home", "End"].indexOf(key) < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
      var target = event.target;
      if (!target.matches || !target.matches(SELECTOR) || /^(INPUT|SELECT)$/.test(target.tagName)) return;
      var cell = target.closest("td.cell, th.row-title");
      if (!cell) return;
      var list = controlsOf(cell);
      var at = list.indexOf(target);
      if (at < 0 || list.length < 2) return;
      var next = key === "Home" ? 0 : key === "End" ? list.length - 1 : at + (key === "ArrowDown" || key === "ArrowRight" ? 1 : -1);
      if (next < 0 || next >= list.length) return;
      event.preventDefault();
      list.forEach(function (el) { el.tabIndex = -1; });
      list[next].tabIndex = 0;
      list[next].focus();
    });
    // Controls that appear inside a cell later (a badge's runs, "Not this") join its roving set.
    table.addEventListener("toggle", function (event) {
      var cell = event.target.closest && event.target.closest("td.cell");
      if (!cell) return;
      Array.prototype.forEach.call(cell.querySelectorAll(SELECTOR), function (el) { if (el.tabIndex !== 0) el.tabIndex = -1; });
    }, true);
  }

  // `text` is a string or a promise of one (a runnable script still loading): the clipboard API
  // takes the promise within the click, so the copy is still the reader's gesture.
  function copyText(text) {
    if (typeof text !== "string") {
      if (navigator.clipboard && window.isSecureContext && window.ClipboardItem) {
        var blob = text.then(function (t) { return new Blob([t], { type: "text/plain" }); });
        return navigator.clipboard.write([new window.ClipboardItem({ "text/plain": blob })]).catch(function () {
          return text.then(copyText);
        });
      }
      return text.then(copyText);
    }
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "vh";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) resolve(); else reject(new Error("copy refused"));
    });
  }

  function selectText(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // ---- Sortable tables (the verification report): a button in each column heading. ----
  function initSortable() {
    var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
      var body = table.tBodies[0];
      var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
      var original = Array.prototype.slice.call(body.rows);
      headers.forEach(function (th, column) {
        var button = th.querySelector("button.sort"); // in the page: nothing moves when this script runs
        if (!button) return;
        button.addEventListener("click", function () {
          var direction = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
          headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", direction);
          var sign = direction === "ascending" ? 1 : -1;
          var keyed = original.map(function (row, index) { return { row: row, index: index, key: sortKey(row.cells[column]) }; });
          keyed.sort(function (a, b) {
            var order = typeof a.key === "number" && typeof b.key === "number" ? a.key - b.key : collator.compare(String(a.key), String(b.key));
            return order * sign || a.index - b.index;
          });
          var fragment = document.createDocumentFragment();
          keyed.forEach(function (item) { fragment.appendChild(item.row); });
          body.appendChild(fragment);
        });
      });
    });
  }

  function sortKey(cell) {
    if (!cell) return "";
    var value = cell.getAttribute("data-sort");
    if (value !== null) {
      var number = parseFloat(value);
      return isNaN(number) ? value : number;
    }
    return cell.textContent.trim();
  }

  // ---- Search across sheets: the box is in every page's header; its code and index load on focus.
  function initSearch() {
    var box = document.querySelector(".site-search");
    if (!box || !hpg.readerSrc) return;
    box.hidden = false;
    var input = box.querySelector("input");
    function start() { hpg.reader().then(function (api) { api.search(box); }, function () { box.classList.add("search-failed"); }); }
    input.addEventListener("focus", start);
    if (input.value || document.activeElement === input) start();
  }

  ready(function () {
    initThemeToggle();
    initSearch();
    initSheet();
    initSortable();
  });
})();
