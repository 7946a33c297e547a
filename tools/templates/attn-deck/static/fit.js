// Every slide fits its 1280x720 frame with text and code at full size. A slide taller than the
// frame continues on a new slide below it (a vertical sub-slide), cut between cells, between a
// cell's code and its output, between paragraphs, or between code lines; only what cannot be
// cut (one tall figure, say) is zoomed out until it fits. Long code lines wrap (deck.css).
// Linear navigation: the right arrow, Space, Page Down and a presenter's clicker walk every
// slide, sub-slides included. When all is laid out, <body> gets data-deck-ready.
(function () {
  var W = 1280, H = 720;

  // A block with something to show (not the empty collapser bar beside a cell's code, say).
  function shown(el) {
    return !el.matches("aside.notes, script, style") && el.getClientRects().length > 0
      && (el.textContent.trim() !== "" || el.matches("img, svg") || !!el.querySelector("img, svg"));
  }

  // The position (a Range's start) at which `slide`'s content first runs below `limit` px
  // from its top, between two blocks or two lines of code; null where nothing can be cut.
  function cutPoint(slide, limit) {
    var scale = Reveal.getScale(), top = slide.getBoundingClientRect().top;
    function bottom(rect) { return (rect.bottom - top) / scale; }
    // A block ends below its margin: a last paragraph that ends just above the limit can still
    // push the slide past its frame by its bottom margin (and the slide would then be zoomed).
    function end(el) { return bottom(el.getBoundingClientRect()) + parseFloat(getComputedStyle(el).marginBottom); }
    function before(el) {
      var range = document.createRange();
      range.setStartBefore(el);
      return range;
    }
    // A first block never moves on alone: where it is too tall, cut inside it; where nothing
    // inside it runs past the limit (only its own padding or margin does), cut after it.
    var box = slide, after = null;
    for (;;) {
      var list = Array.prototype.filter.call(box.children, shown);
      var k = list.findIndex(function (el) { return end(el) > limit; });
      if (k < 0) return after;
      if (k > 0) return before(list[k]);
      if (list.length > 1) after = before(list[1]);
      if (list[0].tagName === "PRE") return lineCut(list[0], bottom, limit) || after;
      box = list[0];
    }
  }

  // Cut a code block after its last line that ends above `limit`.
  function lineCut(pre, bottom, limit) {
    var walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT), node, best = null;
    while ((node = walker.nextNode())) {
      for (var i = node.data.indexOf("\n"); i >= 0; i = node.data.indexOf("\n", i + 1)) {
        var r = document.createRange();
        r.setStart(node, i);
        r.setEnd(node, i + 1);
        if (bottom(r.getBoundingClientRect()) > limit) return best;
        best = document.createRange();
        best.setStart(node, i + 1);
      }
    }
    return best;
  }

  // Move what runs below the frame of `slide` into a new slide after it; repeat there.
  function split(slide) {
    var limit = H - parseFloat(getComputedStyle(slide).paddingBottom);
    for (var n = 0; slide.scrollHeight > H && n < 20; n++) {
      var cut = cutPoint(slide, limit);
      if (!cut) return;
      var notes = slide.querySelector(":scope > aside.notes");
      if (notes) slide.appendChild(notes);  // the notes stay with the first part
      cut.setEnd(slide, notes ? slide.childNodes.length - 1 : slide.childNodes.length);
      var next = document.createElement("section");
      next.style.display = "block";  // reveal.js manages it from the next sync on
      next.appendChild(cut.extractContents());
      slide.after(next);
      slide = next;
    }
  }

  function zoomToFit(slide) {
    var z = Math.min(1, H / slide.scrollHeight, W / slide.scrollWidth);
    if (z < 1) slide.style.zoom = Math.floor(z * 98) / 100;
  }

  var loaded = new Promise(function (done) {
    if (document.readyState === "complete") done(); else window.addEventListener("load", done);
  });
  Reveal.initialize({
    width: W, height: H, margin: 0, minScale: 0.2, maxScale: 2.0,
    controls: true, progress: true, history: true, hash: true, center: true,
    navigationMode: "linear", slideNumber: "c/t", transition: "slide", plugins: [RevealNotes]
  }).then(function () { return Promise.all([loaded, document.fonts.ready]); }).then(function () {
    var view = Reveal.getConfig().viewDistance;
    Reveal.configure({ viewDistance: 1000 });  // lay out every slide, to measure it
    Reveal.getSlides().forEach(split);
    Reveal.sync();  // reveal.js takes in the new slides
    Reveal.getSlides().forEach(zoomToFit);
    Reveal.configure({ viewDistance: view });
    document.body.dataset.deckReady = "1";
  });
})();
