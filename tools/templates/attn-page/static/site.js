// The site's only script, and nothing depends on it: without it the chapter list stays open and
// figures stay at the page's width.
// - On a narrow screen (a phone) the chapter list starts closed behind its "Chapters" button.
// - A figure opens at full size on a tap or click (or Enter), and closes the same way or with Escape.
(function () {
  if (window.matchMedia("(max-width: 800px)").matches)
    document.querySelectorAll("details.menu").forEach(function (d) { d.open = false; });
  document.querySelectorAll("button.figure-zoom").forEach(function (button) {
    button.addEventListener("click", function () {
      var open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    document.querySelectorAll('button.figure-zoom[aria-expanded="true"]').forEach(function (b) {
      b.setAttribute("aria-expanded", "false");
    });
  });
})();
