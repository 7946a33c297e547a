// The site's only script, and nothing depends on it: without it the chapter list stays open and
// figures stay at the page's width.
// - On a narrow screen (a phone) the chapter list starts closed behind its "Chapters" button.
// - A figure opens at full size on a tap or click (or Enter), and closes the same way, with its
//   close control, or with Escape.
// - A table wider than its column shows "Scroll sideways" and a fading right edge while columns
//   are hidden (without the script it still scrolls, without the cue).
(function () {
  if (window.matchMedia("(max-width: 800px)").matches)
    document.querySelectorAll("details.menu").forEach(function (d) { d.open = false; });
  document.querySelectorAll("button.figure-zoom").forEach(function (button) {
    button.addEventListener("click", function () {
      var open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
    });
  });
  document.querySelectorAll(".wide-table").forEach(function (wrap) {
    var box = wrap.querySelector(".table-scroll");
    function mark() {
      var hidden = box.scrollWidth > box.clientWidth + 1;
      wrap.classList.toggle("overflowing", hidden);
      wrap.classList.toggle("more-right", hidden && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    }
    box.addEventListener("scroll", mark, {passive: true});
    window.addEventListener("resize", mark);
    mark();
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    document.querySelectorAll('button.figure-zoom[aria-expanded="true"]').forEach(function (b) {
      b.setAttribute("aria-expanded", "false");
    });
  });
})();
