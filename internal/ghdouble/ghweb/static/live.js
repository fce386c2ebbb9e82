// The pages ask for themselves again every second and swap in what
// changed (the element #live), so a person watches each step arrive.
// A field being typed into is left alone until it is left or emptied.
(function () {
  "use strict";
  var etag = null;
  var busy = function (el) {
    var a = document.activeElement;
    return a && el.contains(a) && (a.tagName === "TEXTAREA" || a.tagName === "INPUT") && a.value !== "";
  };
  var poll = function () {
    var headers = {};
    if (etag) {
      headers["If-None-Match"] = etag;
    }
    fetch(location.pathname + location.search, { headers: headers, cache: "no-store", credentials: "same-origin" })
      .then(function (res) {
        if (res.status !== 200) {
          return null;
        }
        var next = res.headers.get("ETag");
        return res.text().then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = doc.getElementById("live");
          var cur = document.getElementById("live");
          if (!fresh || !cur || busy(cur)) {
            return;
          }
          cur.replaceWith(document.importNode(fresh, true));
          document.title = doc.title;
          etag = next;
          document.documentElement.setAttribute("data-updated", new Date().toISOString());
        });
      })
      .catch(function () {})
      .then(function () {
        setTimeout(poll, 1000);
      });
  };
  // The first answer, without an ETag, swaps in the same page: what
  // changed between the page's load and then is not missed.
  setTimeout(poll, 1000);
})();
