// Live updates without reloading: every two seconds, while the page is
// shown, fetch the page's main part again and put it in place when it
// changed (the server answers 304 when it did not). A sign-in that ended
// reloads the page, which then asks to sign in again.
(function () {
  "use strict";
  var main = document.getElementById("live");
  if (!main || !main.dataset.live) {
    return;
  }
  var url = main.dataset.live;
  var etag = main.dataset.etag || "";
  var busy = false;
  function poll() {
    if (busy || document.hidden) {
      return;
    }
    busy = true;
    var headers = {"X-Forge-Live": "1"};
    if (etag) {
      headers["If-None-Match"] = etag;
    }
    fetch(url, {headers: headers, credentials: "same-origin", cache: "no-store", redirect: "manual"})
      .then(function (res) {
        if (res.status === 304) {
          return null;
        }
        if (res.status !== 200) {
          window.location.reload();
          return null;
        }
        etag = res.headers.get("ETag") || "";
        return res.text();
      })
      .then(function (html) {
        if (html !== null && html !== undefined) {
          main.innerHTML = html;
          main.dataset.updated = String(Date.now());
        }
      })
      .catch(function () {})
      .then(function () { busy = false; });
  }
  setInterval(poll, 2000);
}());
