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
  // Text whose `backticks` mark code, as the pages show it: the code in <code>.
  function withCode(parent, text) {
    String(text).split("`").forEach(function (part, i) {
      if (!part) return;
      parent.appendChild(i % 2 ? el("code", "", part) : document.createTextNode(part));
    });
    return parent;
  }

  // ---- Search ------------------------------------------------------------------------------
  // A row is scored per word of the query, by the best place the word (stemmed: "clipping" finds
  // "clip", "gradients" "gradient") occurs in it: the row's title first, then its id, an API name
  // its code calls, its section, the names and keywords its code shows, a fact's text, its notes
  // last. A row must hold every word (or, when none does, as many as any row). Bonuses: a row whose
  // id is the query, whose title is the query (in its order), whose title holds every word, whose
  // section is named by the query or holds every word. Ties keep the sheets' order.
  var WEIGHT = { title: 10, aside: 7, id: 8, api: 8, section: 4, code: 3, text: 2, notes: 1 };
  var PART = 0.6; // a word that is only part of a name (clip in clip_grad_norm_, Batch in BatchNorm)
  var OTHERS = 0.3; // the other places a word is in, beside its best
  var MISSING = 6; // a query of three words or more may miss one, at this cost
  var STOP = {};
  ("a an and are as at be by can do does for from how i in into is it its of on or the to vs with " +
   "what when which").split(" ").forEach(function (w) { STOP[w] = true; });
  var IRREGULAR = { axes: "axis", indices: "index", matrices: "matrix", vertices: "vertex", dims: "dim" };

  // Porter's stemmer, steps 1a-1c and 5 (plurals, -ed, -ing, a final e), -ness, and -ize as -ise: enough
  // for a query to meet the titles' and notes' other forms of a word.
  function isCons(w, i) {
    var c = w.charAt(i);
    if ("aeiou".indexOf(c) >= 0) return false;
    return c !== "y" || i === 0 || !isCons(w, i - 1);
  }
  function measure(w) { // the m of Porter's [C](VC){m}[V]
    var m = 0, i = 0, n = w.length;
    while (i < n && isCons(w, i)) i++;
    while (i < n) {
      while (i < n && !isCons(w, i)) i++;
      if (i >= n) break;
      while (i < n && isCons(w, i)) i++;
      m++;
    }
    return m;
  }
  function hasVowel(w) { for (var i = 0; i < w.length; i++) if (!isCons(w, i)) return true; return false; }
  function cvc(w) {
    var n = w.length;
    return n >= 3 && isCons(w, n - 1) && !isCons(w, n - 2) && isCons(w, n - 3) && "wxy".indexOf(w.charAt(n - 1)) < 0;
  }
  function stem(word) {
    var w = IRREGULAR[word] || word;
    if (w.length < 4 || /[^a-z]/.test(w)) return w;
    w = w.replace(/iz(e|ed|er|ers|es|ing|ation|ations)$/, "is$1");
    if (/sses$/.test(w)) w = w.slice(0, -2);
    else if (/ies$/.test(w)) w = w.slice(0, -2);
    else if (/[^s]s$/.test(w)) w = w.slice(0, -1);
    var base = null;
    if (/eed$/.test(w)) { if (measure(w.slice(0, -3)) > 0) w = w.slice(0, -1); }
    else if (/ed$/.test(w) && hasVowel(w.slice(0, -2))) base = w.slice(0, -2);
    else if (/ing$/.test(w) && hasVowel(w.slice(0, -3))) base = w.slice(0, -3);
    if (base !== null) {
      w = base;
      if (/(at|bl|is)$/.test(w)) w += "e";
      else if (/([^aeiouylsz])\1$/.test(w)) w = w.slice(0, -1);
      else if (measure(w) === 1 && cvc(w)) w += "e";
    }
    if (/y$/.test(w) && hasVowel(w.slice(0, -1))) w = w.slice(0, -1) + "i";
    if (/ness$/.test(w) && measure(w.slice(0, -4)) > 0) w = w.slice(0, -4); // randomness: random
    if (/e$/.test(w)) {
      var m = measure(w.slice(0, -1));
      if (m > 1 || (m === 1 && !cvc(w.slice(0, -1)))) w = w.slice(0, -1);
    }
    if (/ll$/.test(w) && measure(w) > 1) w = w.slice(0, -1);
    return w;
  }

  // The words of a text, lower case, stemmed: each whole (a dotted name, and each of its parts:
  // nn.conv2d, nn, conv2d) at `weight`, and the pieces of a compound word (clip_grad_norm_, BatchNorm,
  // Conv2D) at PART of it. `out` maps each to the most it was given.
  function words(text, out, weight) {
    weight = weight || 1;
    String(text).replace(/`/g, " ").split(/[^A-Za-z0-9_.]+/).forEach(function (raw) {
      raw = raw.replace(/^[._]+|[._]+$/g, "");
      if (!raw) return;
      add(out, raw.toLowerCase(), weight);
      raw.split(".").forEach(function (segment) {
        if (segment !== raw) add(out, segment.toLowerCase(), weight);
        var chunks = segment.split("_");
        if (chunks.length > 1) chunks.forEach(function (chunk) { add(out, chunk.toLowerCase(), weight * PART); });
        var pieces = segment.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
          .replace(/([A-Za-z])([0-9])/g, "$1 $2").split(/[^A-Za-z0-9]+/);
        if (pieces.length > 1) pieces.forEach(function (piece) { add(out, piece.toLowerCase(), weight * PART); });
      });
    });
    return out;
  }
  function add(out, word, weight) {
    if (!word || STOP[word]) return;
    var key = stem(word);
    if (!(out[key] >= weight)) out[key] = weight;
  }
  // What each row holds, by field, stemmed once when the index arrives; and, for the hit's
  // "where", the first API name or shown name that holds each word.
  function prepare(data) {
    if (data.prepared) return data.prepared;
    data.frequency = {};
    var at = 0;
    data.prepared = data.rows.map(function (row, order) {
      var before = data.rows[order - 1];
      at = before && before[0] === row[0] && before[3] === row[3] ? at + 1 : 0; // the row's place in its section
      var aside = "";
      var title = row[2].replace(/\(([^)]*)\)/g, function (_, inside) { aside += " " + inside; return " "; });
      var extra = row[5] || {};
      var f = { title: words(title, {}), aside: words(aside, {}), id: words(row[1].replace(/-/g, " "), {}),
        section: words(row[3], {}), api: {}, code: {}, text: {}, notes: words(extra.n || "", {}) };
      var where = {}, apis = [];
      row[4].forEach(function (cell) {
        cell[2].forEach(function (name) {
          apis.push([cell[0], name]);
          var leaf = words(name.slice(name.lastIndexOf(".") + 1), {});
          Object.keys(leaf).forEach(function (k) { if (!where[k]) where[k] = [cell[0], name]; });
          merge(f.api, leaf);
          merge(f.api, words(name, {}, PART)); // the modules it lives in: torch, nn, optax
        });
        cell[3].forEach(function (word) {
          var found = words(word, {});
          if (cell[1] === "t") { merge(f.text, found); return; }
          Object.keys(found).forEach(function (k) { if (!where[k]) where[k] = [cell[0], word]; });
          merge(f.code, found);
        });
      });
      var seen = {};
      for (var name in f) for (var k in f[name]) seen[k] = true;
      for (k in seen) data.frequency[k] = (data.frequency[k] || 0) + 1;
      return { fields: f, where: where, apis: apis, title: sequence(row[2]), section: terms(row[3]).map(stem).sort().join(" "), at: at, id: row[1] };
    });
    return data.prepared;
  }
  // How much a word tells rows apart: 1 for a word few rows hold, down to 0.5 for one every row holds.
  function rarity(data, key) {
    var df = data.frequency[key] || 0;
    return 0.5 + 0.5 * Math.log((data.rows.length + 1) / (df + 1)) / Math.log(data.rows.length + 1);
  }
  function merge(into, from) { for (var k in from) if (!(into[k] >= from[k])) into[k] = from[k]; }
  function terms(text) { // a query's or a title's whole words, in order, without common words
    return String(text).replace(/`/g, " ").toLowerCase().split(/[^a-z0-9_.]+/)
      .map(function (t) { return t.replace(/^[._]+|[._]+$/g, ""); }).filter(function (t) { return t && !STOP[t]; });
  }
  function sequence(title) { return terms(title.replace(/\([^)]*\)/g, " ")).map(stem).join(" "); }

  function rank(data, query) {
    var words = terms(query);
    if (!words.length) return [];
    var stems = words.map(stem);
    var rows = prepare(data);
    var found = [], most = 0, held = [];
    data.rows.forEach(function (row, order) {
      var p = rows[order], f = p.fields, total = 0, matched = 0, where = null, inTitle = 0, inSection = 0;
      for (var t = 0; t < words.length; t++) {
        var term = words[t], keys = [stems[t]], best = 0, sum = 0;
        // two words typed for one name (zero grad: zero_grad, batch norm: batchnorm): the name counts for both
        [words[t - 1] + "_" + term, term + "_" + words[t + 1], words[t - 1] + term, term + words[t + 1]].forEach(function (joined) {
          if (joined.indexOf("undefined") < 0 && keys.indexOf(joined) < 0) keys.push(joined);
        });
        var dotted = term.indexOf(".") > 0;
        if (dotted) { // a dotted name as written (nnx.Conv): an API name ending in it, and its last part
          keys.push(stem(term.slice(term.lastIndexOf(".") + 1)));
          for (var i = 0; i < p.apis.length; i++) {
            var api = p.apis[i][1].toLowerCase();
            if (api === term || api.slice(-term.length - 1) === "." + term) {
              best = WEIGHT.api + 1;
              if (!where) where = p.apis[i];
              break;
            }
          }
        }
        keys.forEach(function (key, k) {
          for (var name in WEIGHT) {
            var w = f[name][key] ? WEIGHT[name] * f[name][key] * (k && key.indexOf(".") < 0 && dotted ? PART : 1) : 0;
            sum += w;
            if (w > best) best = w;
          }
        });
        p.hit = p.hit || [];
        p.hit[t] = best > 0;
        if (!best) continue;
        matched++;
        // the best place counts, and a little each other place it is in; a word most rows hold counts less
        total += (best + Math.min(OTHERS * (sum - best), 2)) * rarity(data, keys[0]);
        if (f.title[keys[0]] || f.aside[keys[0]]) inTitle++;
        if (f.section[keys[0]]) inSection++;
        if (!where && p.where[keys[0]]) where = p.where[keys[0]]; // the first API or name of the code that holds it
      }
      if (!matched) return;
      for (var u = 0; u < words.length; u++) if (p.hit[u]) held[u] = true;
      if (p.id === words.join("-") || p.id === words.join("")) total += 12;
      if (p.title === stems.join(" ")) total += 8;
      else if (inTitle === words.length && words.length > 1) total += 4;
      if (p.section === stems.slice().sort().join(" ")) total += 8 - Math.min(p.at, 10) * 0.2; // a section named by the query: its rows, first first
      else if (inSection === words.length) total += 5;
      most = Math.max(most, matched);
      found.push({ score: total - MISSING * (words.length - matched), matched: matched, order: order, row: row, sheet: data.sheets[row[0]], where: where });
    });
    // a word no row holds (a typo, a name the site lacks) leaves nothing to show; three words or more
    // may leave one out that other rows hold ("learning rate per layer": the row says "parts")
    var unheld = words.filter(function (w, v) { return !held[v]; });
    if (unheld.length) { var none = []; none.unheld = unheld; return none; }
    var least = most - (words.length >= 3 && most === words.length ? 1 : 0);
    found = found.filter(function (hit) { return hit.matched >= least; });
    found.sort(function (a, b) { return b.score - a.score || a.order - b.order; });
    found.partial = most < words.length;
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
          link.href = ((hit.row[5] || {}).p || hit.sheet.id) + ".html#" + encodeURIComponent(hit.row[1]);
          link.appendChild(withCode(el("span", "hit-title"), hit.row[2]));
          var where = hit.sheet.title + " › " + hit.row[3];
          if (hit.where) where += " · " + hit.sheet.columns[hit.where[0]][1] + (hit.where[1] ? ": " + hit.where[1] : "");
          link.appendChild(el("span", "hit-where", where));
          item.appendChild(link);
          list.appendChild(item);
        });
        list.hidden = !input.value.trim();
        if (!input.value.trim()) { status.textContent = ""; return; }
        status.textContent = results.length ? (results.length > MAX_RESULTS ? "First " + MAX_RESULTS + " of " + results.length : results.length) + " row" + (results.length === 1 ? "" : "s") + " in all sheets" + (results.partial ? " (none has every word: these have all but one)" : "") : "No row in any sheet matches." + (results.unheld ? " None has “" + results.unheld.join("”, “") + "”." : "");
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
  // "Differences only" shows the rows where the two columns behave differently, from the data
  // (generator/render/compare.py does the same for compare.html): a difference the row declares
  // between them, a wrong snippet ("Not this") of one that is the other's idiom, code that no
  // `same:` proof covers in both, facts that differ, or code in one and a fact in the other. A row
  // a column lacks (a "none" cell) shows only when asked. Each row shown says why.
  function reasons(row, byCol, a, b, names) {
    var ca = byCol[a], cb = byCol[b];
    if (!ca || !cb || ca[1] === "n" || cb[1] === "n") return null;
    var extra = row[5] || {}, out = [];
    (extra.d || []).forEach(function (d) {
      var cols = d[1];
      if (!cols.length || (cols.indexOf(a) >= 0) !== (cols.indexOf(b) >= 0)) out.push(d[0]);
    });
    [[a, b], [b, a]].forEach(function (pair) {
      (extra.i || []).forEach(function (i) {
        if (i[0] === pair[0] && i[1] === pair[1]) out.push("a wrong snippet of " + names[i[0]] + " uses " + names[i[1]] + "'s " + i[2].join(", "));
      });
    });
    if (ca[1] === "c" && cb[1] === "c") {
      var same = extra.s || [];
      if (same.indexOf(a) < 0 || same.indexOf(b) < 0) out.push("not proven to compute the same");
    } else if (ca[1] === "t" && cb[1] === "t") {
      var norm = function (cell) { return cell[3][0].trim().replace(/\s+/g, " ").toLowerCase(); };
      if (norm(ca) !== norm(cb)) out.push("the facts differ");
    } else {
      out.push("code in one, a fact in the other");
    }
    return out;
  }

  function compare() {
    var sheet = hpg.sheet;
    var box = sheet && sheet.controls.querySelector(".compare");
    if (!box || box.getAttribute("data-started")) return;
    box.setAttribute("data-started", "yes");
    var params = new URLSearchParams(window.location.search);
    var wanted = (params.get("compare") || "").split(",");
    var mapped = hpg.compared(window.location.search);
    var selects = Array.prototype.slice.call(box.querySelectorAll("select"));
    var diff = box.querySelector("input[name=diff]");
    var lacking = box.querySelector("input[name=lacking]");
    var off = box.querySelector(".compare-off");
    var note = box.querySelector(".compare-note");
    if (mapped) { selects[0].value = mapped[0]; selects[1].value = mapped[1]; }
    diff.checked = params.get("diff") === "1";
    lacking.checked = params.get("lacking") === "1";
    // what the URL named that this sheet calls otherwise, or lacks
    var renamed = mapped ? wanted.slice(0, 2).map(function (id, i) { return id !== mapped[i] ? id + " → " + sheet.names[mapped[i]] : ""; }).filter(Boolean) : [];
    var missing = mapped ? [] : wanted.filter(function (id) { return id && !hpg.mapColumn(id); });
    var data = null, rows = {}; // the index; row id -> [index row, {column id: cell}]

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
    function why(tr) {
      var entry = rows[tr.id];
      if (!entry || !active()) return [];
      var s = state();
      return reasons(entry[0], entry[1], s[0], s[1], sheet.names);
    }
    function keep(tr) {
      if (!data || !active()) return true;
      var found = why(tr);
      if (found === null) return lacking.checked;
      return !diff.checked || found.length > 0;
    }
    // Under each row's title, while differences only are shown: why the row is one.
    function label(tr, text) {
      var th = tr.querySelector(".row-title"), old = th.querySelector(".why-shown");
      if (old) th.removeChild(old);
      if (text) th.appendChild(withCode(el("span", "why-shown"), text));
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
      var trs = Array.prototype.slice.call(sheet.table.querySelectorAll("tr.row"));
      var counts = {};
      trs.forEach(function (tr) {
        var found = data && active() && diff.checked ? why(tr) : null;
        label(tr, found && found.length && !tr.hidden ? "Shown: " + found.join("; ") + "." : "");
        if (found && !tr.hidden) found.forEach(function (r) { var k = /^a wrong snippet/.test(r) ? "a wrong snippet is the other's idiom" : r === "not proven to compute the same" || r === "the facts differ" || r === "code in one, a fact in the other" ? r : "a declared difference"; counts[k] = (counts[k] || 0) + 1; });
      });
      var shown = trs.filter(function (tr) { return !tr.hidden; }).length;
      var parts = Object.keys(counts).map(function (k) { return counts[k] + " " + k; });
      note.textContent = missing.length
        ? "This sheet has no column for " + missing.join(" or ") + ": pick two of its own."
        : active() ? shown + " of " + trs.length + " rows shown" + (diff.checked ? ", differences only" + (parts.length ? " (" + parts.join(", ") + ")" : "") : "") + (lacking.checked ? "" : "; rows one of them lacks are hidden") + "." + (renamed.length ? " Carried from another sheet: " + renamed.join(", ") + "." : "")
        : "Pick two columns.";
    }
    function changed() { missing = []; renamed = []; writeUrl(); apply(); }
    selects.concat([diff, lacking]).forEach(function (input) { input.addEventListener("change", changed); });
    off.addEventListener("click", function () {
      selects[0].value = selects[1].value = "";
      diff.checked = lacking.checked = false;
      changed();
      root().classList.remove("comparing");
      var open = sheet.controls.querySelector(".compare-open");
      if (open) open.focus();
    });
    apply();
    index().then(function (loaded) {
      data = loaded;
      var sIndex = data.sheets.map(function (s) { return s.id; }).indexOf(sheet.id);
      var columns = sIndex >= 0 ? data.sheets[sIndex].columns : [];
      data.rows.forEach(function (row) {
        if (row[0] !== sIndex) return;
        var byCol = {};
        row[4].forEach(function (cell) { byCol[columns[cell[0]][0]] = cell; });
        rows[row[1]] = [row, byCol];
      });
      writeUrl();
      apply();
      box.setAttribute("data-ready", "yes");
    }, function () {
      note.textContent = "The search index could not load, so differences cannot be told apart; both columns show every row.";
      box.setAttribute("data-ready", "failed");
    });
  }
  function root() { return document.documentElement; }

  hpg.readerApi = { search: search, compare: compare, runnable: runnable, rank: rank, stem: stem, reasons: reasons };
})();
