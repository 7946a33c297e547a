// Every slide fits its 1280x720 frame: a slide whose content is taller or wider than the
// frame is zoomed out until it fits (long code lines already wrap, see deck.css).
(function () {
  var W = 1280, H = 720;
  function fit(slide) {
    if (!slide || slide.dataset.fitted) return;
    slide.style.zoom = 1;
    var h = slide.scrollHeight, w = slide.scrollWidth;
    var z = Math.min(1, H / h, W / w);
    if (z < 1) slide.style.zoom = Math.floor(z * 98) / 100;
    slide.dataset.fitted = "1";
    Reveal.layout();
  }
  Reveal.initialize({
    width: W, height: H, margin: 0.02, minScale: 0.2, maxScale: 2.0,
    controls: true, progress: true, history: true, hash: true, center: true,
    slideNumber: "c/t", transition: "slide", plugins: [RevealNotes]
  }).then(function () { fit(Reveal.getCurrentSlide()); });
  Reveal.on("slidechanged", function (event) { fit(event.currentSlide); });
})();
