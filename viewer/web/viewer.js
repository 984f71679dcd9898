/* viewer/web/viewer.js: the viewer page's script (copied to OUT_viewer/viewer.js). It reads
 * OUT.view.json beside the page (docs/VIEWER.md), shows the stylised image OUT.dzi full-window
 * in OpenSeadragon and, where the output has it, the content image OUT_content.dzi in the same
 * viewport left of a draggable wipe, and fills the panel with the run's configuration and losses.
 *
 * For tests and scripts: window.nstViewer is the OpenSeadragon viewer (world item 0 the stylised
 * image, item 1 the content image), window.nstViewerReady turns true once both are open, and
 * window.nstViewerError holds a failure. Failures are shown on the page; nothing is written to the
 * console. */
(function () {
  'use strict';

  var WIPE_STEP = 0.02; /* of the width, per arrow key (ten times that with Shift) */

  var assetsUrl = (function () {
    var src = document.currentScript.src;
    return src.slice(0, src.lastIndexOf('/') + 1);
  })();
  var page = decodeURIComponent(location.pathname.slice(location.pathname.lastIndexOf('/') + 1));
  var stem = page.replace(/\.html?$/i, '');

  function $(id) {
    return document.getElementById(id);
  }

  function showMessage(text) {
    $('message').textContent = text;
    $('message').hidden = false;
  }

  function fail(text) {
    window.nstViewerError = text;
    showMessage(text);
  }

  /* a loss term: 5 significant digits, exponents where they read better */
  function formatLoss(v) {
    if (typeof v !== 'number') return '-';
    if (v !== 0 && (Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3)) return v.toExponential(3);
    return String(+v.toPrecision(5));
  }

  function addCell(row, text, tag) {
    var cell = document.createElement(tag || 'td');
    cell.textContent = text;
    row.appendChild(cell);
  }

  function fillPanel(info) {
    $('about').textContent = info.image + ': ' + info.width + ' \u00d7 ' + info.height + ' pixels, nstbatch ' + info.nstbatch;
    var loss = info.loss;
    if (loss && loss.first && loss.last) {
      var body = $('losses').tBodies[0];
      ['total', 'content', 'style', 'tv'].forEach(function (term) {
        var row = body.insertRow(), a = loss.first[term], b = loss.last[term];
        addCell(row, term, 'th');
        addCell(row, formatLoss(a));
        addCell(row, formatLoss(b));
        addCell(row, typeof a === 'number' && typeof b === 'number' && b > 0 ? (a / b).toFixed(1) + '\u00d7' : '-');
      });
    } else {
      $('losses').hidden = true;
      $('no-losses').hidden = false;
    }
    $('config').textContent = info.config || '(not recorded: this page was written by nstbatch-view)';
  }

  /* The content image drawn over the stylised one, clipped at the wipe: left of it the content. */
  function setupWipe(viewer, content) {
    var wipe = $('wipe'), mode = $('mode'), fraction = 0.5, dragging = false;

    function place() {
      var x = Math.round(fraction * viewer.container.clientWidth);
      var size = content.getContentSize();
      var edge = content.viewerElementToImageCoordinates(new OpenSeadragon.Point(x, 0)).x;
      wipe.style.left = x + 'px';
      wipe.setAttribute('aria-valuenow', String(Math.round(fraction * 100)));
      content.setClip(new OpenSeadragon.Rect(0, 0, Math.max(0, Math.min(size.x, edge)), size.y));
    }

    function moveTo(f) {
      fraction = Math.min(1, Math.max(0, f));
      place();
    }

    function setMode(m) {
      wipe.hidden = m !== 'wipe';
      content.setOpacity(m === 'image' ? 0 : 1);
      if (m === 'content') content.setClip(null);
      else place();
    }

    wipe.hidden = false;
    $('mode-row').hidden = false;
    wipe.setAttribute('aria-valuemin', '0');
    wipe.setAttribute('aria-valuemax', '100');
    /* before each frame is drawn, so the clip follows zoom and pan without lagging a frame */
    viewer.addHandler('viewport-change', function () {
      if (mode.value === 'wipe') place();
    });
    wipe.addEventListener('pointerdown', function (e) {
      dragging = true;
      wipe.setPointerCapture(e.pointerId);
      e.preventDefault();
    });
    wipe.addEventListener('pointermove', function (e) {
      if (!dragging) return;
      var r = viewer.container.getBoundingClientRect();
      moveTo((e.clientX - r.left) / r.width);
    });
    ['pointerup', 'pointercancel'].forEach(function (type) {
      wipe.addEventListener(type, function () {
        dragging = false;
      });
    });
    wipe.addEventListener('keydown', function (e) {
      var step = e.shiftKey ? 10 * WIPE_STEP : WIPE_STEP;
      var to = {ArrowLeft: fraction - step, ArrowRight: fraction + step, Home: 0, End: 1}[e.key];
      if (to === undefined) return;
      moveTo(to);
      e.preventDefault();
    });
    mode.addEventListener('change', function () {
      setMode(mode.value);
    });
    place();
  }

  function start(info) {
    document.title = stem + ' \u2013 nstbatch';
    fillPanel(info);
    var viewer = OpenSeadragon({
      element: $('osd'),
      prefixUrl: assetsUrl + 'openseadragon/images/',
      tileSources: encodeURIComponent(info.image),
      maxZoomPixelRatio: 4, /* past 1:1, to look at single pixels */
      showNavigator: true,
      navigatorPosition: 'BOTTOM_RIGHT'
    });
    window.nstViewer = viewer;

    function ready() {
      window.nstViewerReady = true;
    }

    viewer.addOnceHandler('open', function () {
      if (!info.content) return ready();
      viewer.addTiledImage({
        tileSource: encodeURIComponent(info.content),
        index: 1,
        x: 0,
        y: 0,
        width: viewer.world.getItemAt(0).getBounds().width,
        success: function (e) {
          setupWipe(viewer, e.item);
          ready();
        },
        error: function (e) {
          showMessage('the content image ' + info.content + ' cannot be shown: ' + (e.message || 'it failed to open'));
          ready();
        }
      });
    });
    viewer.addOnceHandler('open-failed', function (e) {
      fail('cannot open ' + info.image + ': ' + (e.message || 'it failed to load'));
    });
  }

  if (location.protocol === 'file:') {
    /* browsers refuse a page opened from a file the tiles beside it */
    fail('Open this page through nstbatch-view: run  nstbatch-view ' + stem + '.dzi  and open the address it prints.');
    return;
  }
  fetch(encodeURIComponent(stem) + '.view.json', {cache: 'no-cache'})
    .then(function (r) {
      if (!r.ok) throw new Error(stem + '.view.json: ' + r.status + ' ' + r.statusText);
      return r.json();
    })
    .then(start)
    .catch(function (e) {
      fail('cannot show ' + stem + ': ' + e.message);
    });
})();
