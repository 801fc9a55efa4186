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
    var chosen = columnsFromUrl();
    controls.hidden = false;

    function columnsFromUrl() {
      var params = new URLSearchParams(window.location.search);
      if (!params.has("cols")) return allColumns.slice();
      var wanted = params.get("cols").split(",").map(function (s) { return s.trim(); }).filter(Boolean);
      var known = allColumns.filter(function (id) { return wanted.indexOf(id) >= 0; });
      return known.length || !wanted.length ? known : allColumns.slice();
    }

    function layout(visible) {
      var shown = {};
      visible.forEach(function (id) { shown[id] = true; });
      var cells = table.querySelectorAll("[data-col]");
      for (var i = 0; i < cells.length; i++) cells[i].hidden = !shown[cells[i].getAttribute("data-col")];
      var headers = table.querySelectorAll(".section-header th");
      for (var j = 0; j < headers.length; j++) headers[j].colSpan = visible.length + 1;
      table.setAttribute("data-ncols", String(visible.length));
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

    // Print every column, whatever is chosen on screen.
    function printing(on) { layout(on ? allColumns : chosen); }
    window.addEventListener("beforeprint", function () { printing(true); });
    window.addEventListener("afterprint", function () { printing(false); });
    if (window.matchMedia) {
      var print = window.matchMedia("print");
      if (print.addEventListener) print.addEventListener("change", function (event) { printing(event.matches); });
    }

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
      chooseAll: function () { choose(columnsFromUrl(), false); },
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
    // Compare two columns: its code loads when asked for, or when the URL holds a comparison.
    var compare = document.createElement("button");
    compare.type = "button";
    compare.className = "compare-open";
    compare.textContent = "Compare two columns";
    controls.appendChild(compare);
    function startCompare() { return hpg.reader().then(function (api) { compare.hidden = true; api.compare(); }); }
    compare.addEventListener("click", function () { startCompare().then(function () { var s = controls.querySelector(".compare select"); if (s) s.focus(); }); });
    if (new URLSearchParams(window.location.search).has("compare")) startCompare();

    // Copy buttons: the code shown, and (loaded on demand) the code as a runnable script.
    Array.prototype.forEach.call(table.querySelectorAll("td.kind-code"), function (cell) {
      var pre = cell.querySelector("pre.code");
      if (!pre) return;
      var row = cell.parentNode;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy";
      var label = document.createElement("span");
      label.className = "copy-label";
      label.textContent = "Copy";
      var detail = document.createElement("span");
      detail.className = "vh";
      detail.textContent = " " + (names[cell.getAttribute("data-col")] || "") + " code: " + (row.querySelector(".row-title").firstChild.nodeValue || "").trim();
      button.appendChild(label);
      button.appendChild(detail);
      var run = button.cloneNode(true);
      run.className = "copy-run";
      run.firstChild.textContent = "Copy runnable";
      run.lastChild.textContent = " " + (names[cell.getAttribute("data-col")] || "") + " code as a script with its setup: " + (row.querySelector(".row-title").firstChild.nodeValue || "").trim();
      var meta = cell.querySelector(".meta");
      if (meta) { meta.appendChild(button); meta.appendChild(run); } else { cell.insertBefore(run, pre.nextSibling); cell.insertBefore(button, run); }
    });
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
      var hint = table.querySelector(".sort-hint");
      if (hint) hint.hidden = false;
      headers.forEach(function (th, column) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "sort";
        while (th.firstChild) button.appendChild(th.firstChild);
        th.appendChild(button);
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
