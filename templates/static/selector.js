// The guide's "what matters to you" selector: weights in, frameworks ranked by the weighted sum
// of their scores. Without this script the page shows every framework's scores as a plain list.
(function () {
  "use strict";
  var form = document.getElementById("selector-form");
  var ranking = document.getElementById("selector-ranking");
  if (!form || !ranking) return;
  form.hidden = false;

  function scores(item) {
    var out = {};
    item.getAttribute("data-scores").split(",").forEach(function (pair) {
      var parts = pair.split(":");
      out[parts[0]] = Number(parts[1]);
    });
    return out;
  }

  function rank() {
    var weights = {};
    form.querySelectorAll("input[type=range]").forEach(function (input) {
      weights[input.name] = Number(input.value);
      var shown = document.getElementById("weight-" + input.name);
      if (shown) shown.textContent = input.value;
    });
    var items = Array.prototype.slice.call(ranking.children);
    items.forEach(function (item) {
      var s = scores(item), total = 0;
      Object.keys(weights).forEach(function (k) { total += weights[k] * (s[k] || 0); });
      item.dataset.total = String(total);
      item.querySelector(".total").textContent = "— weighted score " + total;
    });
    items.sort(function (a, b) { return Number(b.dataset.total) - Number(a.dataset.total); });
    items.forEach(function (item) { ranking.appendChild(item); });
  }

  form.addEventListener("input", rank);
  rank();
})();
