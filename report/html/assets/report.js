// report.js draws the charts of a snapview report. It reads the JSON data
// island (#snapview-data): for each device the ECharts options built in Go
// and what the tooltips, the markers and the inspection panel need. It
// must never contain a closing script tag: write "<\/" in strings
// (html.go checks).
(function () {
  "use strict";
  var started = performance.now();
  var data = JSON.parse(document.getElementById("snapview-data").textContent);
  var enc = echarts.format.encodeHTML;
  var charts = [], drawn = 0;
  var palette = ["#4e79a7", "#f28e2c", "#e15759", "#76b7b2", "#59a14f",
    "#edc949", "#af7aa1", "#ff9da7", "#9c755f", "#86bcb6"];
  var colorOther = "#bab0ac", colorPending = "#7a0019", colorFree = "#e9e9e9";

  // fmtBytes is report.FormatBytes: one decimal, binary units.
  function fmtBytes(n) {
    if (n > -1024 && n < 1024) { return String(Math.round(n)) + " B"; }
    var units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    var v = n / 1024;
    for (var i = 0; i < units.length; i++) {
      var s = fixed1(v);
      if (i === units.length - 1 || (s !== "1024.0" && s !== "-1024.0" && v > -1024 && v < 1024)) {
        return s + " " + units[i];
      }
      v /= 1024;
    }
    return String(n);
  }

  // fixed1 writes v with one decimal as Go's strconv.FormatFloat(v, 'f',
  // 1, 64): a tie (v*10 an exact half, as 609.25) goes to the even digit
  // ("609.2"), where toFixed takes the larger ("609.3").
  function fixed1(v) {
    var t = Math.abs(v) * 10, f = Math.floor(t);
    if (t - f === 0.5 && f % 2 === 0) {
      return (v < 0 ? "-" : "") + (f / 10).toFixed(1);
    }
    return v.toFixed(1);
  }

  // fmtInt is report.FormatInt: thousands separated by commas.
  function fmtInt(n) {
    return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  // fmtAxisBytes labels a y tick. The ticks are multiples of a power of
  // two at most an eighth of the highest (html_charts.go htmlYTicks), so three
  // decimals write them exactly: 1.125 GiB, 384 MiB.
  function fmtAxisBytes(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    var v = Math.abs(n), u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return (n < 0 ? "-" : "") + (Math.round(v * 1000) / 1000) + " " + units[u];
  }

  function framesHTML(stack, limit) {
    var frames = data.stacks[stack] || [];
    var out = "";
    for (var i = 0; i < frames.length && i < limit; i++) {
      out += "<div class=\"tt-frame\">" + enc(frames[i]) + "<\/div>";
    }
    if (frames.length > limit) {
      out += "<div class=\"tt-frame\">\u2026 " + (frames.length - limit) + " more<\/div>";
    }
    if (frames.length === 0 && stack >= 0) {
      out += "<div class=\"tt-frame\">&lt;no stack recorded&gt;<\/div>";
    }
    return out;
  }

  function row(marker, name, value) {
    return "<div class=\"tt-row\">" + (marker || "") + "<span class=\"tt-name\">" + enc(name) +
      "<\/span><span class=\"tt-val\">" + enc(value) + "<\/span><\/div>";
  }

  function plural(n, noun) { return fmtInt(n) + " " + noun + (n === 1 ? "" : "s"); }

  function secs(ms) { return (ms / 1000).toFixed(3) + " s"; }

  // Dataset columns (html_charts.go): x shown, the other x, reserved,
  // active, allocated, groups.
  var colReserved = 2, colActive = 3, colAllocated = 4, colGroups = 5;

  function entryOf(dev, r) { return dev.byIndex ? r[0] : r[1]; }

  function timelineTooltip(dev) {
    var nGroups = dev.groups.length;
    return function (params) {
      if (!params || !params.length) { return ""; }
      var r = params[0].value;
      var head = "after entry " + fmtInt(entryOf(dev, r));
      if (dev.xIsTime) { head += ", t = " + secs(dev.byIndex ? r[1] : r[0]); }
      var out = "<div class=\"tt-head\">" + enc(head) + "<\/div>";
      out += row("", "reserved", fmtBytes(r[colReserved]));
      out += row("", "active", fmtBytes(r[colActive]));
      out += row("", "allocated", fmtBytes(r[colAllocated]));
      var groups = [];
      for (var i = 0; i < params.length; i++) {
        var g = params[i].seriesIndex;
        if (g < nGroups && r[colGroups + g] > 0) {
          groups.push({g: g, bytes: r[colGroups + g], marker: params[i].marker});
        }
      }
      groups.sort(function (a, b) { return b.bytes - a.bytes || a.g - b.g; });
      for (var j = 0; j < groups.length; j++) {
        var grp = dev.groups[groups[j].g];
        out += row(groups[j].marker, grp.label, fmtBytes(groups[j].bytes));
      }
      // The single allocations drawn on their own, live here.
      for (var k = 0; k < params.length; k++) {
        var si = params[k].seriesIndex - dev.singleBase;
        var sg = dev.shownSingles && dev.shownSingles[si];
        if (si >= 0 && sg && r[colGroups + nGroups + si] > 0) {
          out += row(params[k].marker, "allocation at entry " + fmtInt(sg.start) + " (" + dev.groups[sg.group].label + ")", fmtBytes(sg.size));
        }
      }
      out += "<div class=\"tt-hint\">click: the allocator state here<\/div>";
      return out;
    };
  }

  // markerSeries returns the markers of the active and reserved series for
  // the axis shown: steps as alternating bands (active), record_function
  // ranges as a light strip along the top, the peak pin and the OOM lines
  // labelled at the bottom so that they never sit on the pin (reserved).
  function markerSeries(dev, top) {
    var m = dev.markers, ix = dev.byIndex;
    function x(i, us) { return ix ? i : us / 1000; }
    var bands = [];
    m.steps.forEach(function (s, k) {
      if (k % 2 === 0) {
        bands.push([{xAxis: x(s[0], s[2]), name: "step " + (k + 1)}, {xAxis: x(s[1], s[3])}]);
      }
    });
    var strip = [];
    m.ranges.forEach(function (a, k) {
      strip.push([{xAxis: x(a[0], a[2]), yAxis: top * 0.97, name: m.rangeNames[k]}, {xAxis: x(a[1], a[3]), yAxis: top}]);
    });
    var active = {
      markArea: {silent: true, data: bands, label: {show: false},
        itemStyle: {color: "rgba(0,0,0,0.05)"}}
    };
    var reserved = {
      markArea: {data: strip, label: {show: false, position: "insideBottomLeft", fontSize: 10, color: "#333"},
        emphasis: {label: {show: true}},
        itemStyle: {color: "rgba(110,90,190,0.16)", borderWidth: 0}},
      markPoint: {data: [], symbol: "pin", symbolSize: 40, label: {fontSize: 10, color: "#fff"}},
      markLine: {data: [], symbol: ["none", "none"], silent: true,
        label: {show: true, position: "insideStartTop", formatter: "{b}", fontSize: 11, color: "#b00020"},
        lineStyle: {color: "#b00020", width: 1.5, type: "solid"}}
    };
    if (m.peak) {
      reserved.markPoint.data.push({name: "peak: " + m.peakLabel, coord: [x(m.peak[0], m.peak[1]), m.peak[2]],
        value: "peak", itemStyle: {color: "#d62728"}});
    }
    m.ooms.forEach(function (o) {
      reserved.markLine.data.push({name: "OOM " + fmtBytes(o[2]), xAxis: x(o[0], o[1])});
    });
    return {active: active, reserved: reserved};
  }

  function xFormatter(dev) {
    return dev.byIndex ?
      function (v) { return fmtInt(v); } :
      function (v) { return String(Math.round(v) / 1000) + " s"; };
  }

  function axisName(dev) { return dev.byIndex ? "trace entry" : "time (s)"; }

  // applyAxis sets everything that depends on the x axis shown.
  function applyAxis(dev, chart, rows, reset) {
    var n = dev.groups.length;
    var top = dev.timeline.option.yAxis[0].max || 0;
    var mk = markerSeries(dev, top || 1);
    // redraw keeps the bands and ranges of the window shown.
    dev.marks = [mk.active.markArea.data, mk.reserved.markArea.data];
    dev.marksShown = [0, dev.marks[0].length, 0, dev.marks[1].length];
    if (rows) { dev.drawnKey = null; }
    var series = [];
    for (var i = 0; i < n; i++) { series.push({}); }
    series.push(mk.active, mk.reserved);
    if (dev.overlay && dev.overlay.length) {
      series.push({data: overlayData(dev, rows || dev.timeline.option.dataset[0].source)});
    }
    var ext = xExtent(dev);
    var upd = {
      xAxis: [{name: axisName(dev), axisLabel: {formatter: xFormatter(dev)}, min: ext[0], max: ext[1]}],
      series: series
    };
    if (rows) { upd.dataset = [{source: rows}]; }
    if (reset) {
      upd.dataZoom = [{start: 0, end: 100}, {start: 0, end: 100}];
    }
    upd.dataZoom = (upd.dataZoom || [{}, {}]).map(function (dz) {
      dz.labelFormatter = dev.byIndex ?
        function (v) { return fmtInt(v); } :
        function (v) { return secs(v); };
      return dz;
    });
    chart.setOption(upd);
  }

  // Inspection: the allocator state after an entry.

  function hex(n) { return "0x" + n.toString(16); }

  // liveState computes the state after entry i from every allocation's
  // and segment's life (html_inspect.go HTMLInspect).
  function liveState(ins, i) {
    var segs = [];
    var ranges = ins.segments.filter(function (s) { return s[2] <= i && (s[3] < 0 || s[3] > i); });
    ranges.sort(function (p, q) { return p[0] - q[0]; });
    ranges.forEach(function (s) {
      // The allocator joins adjacent mapped ranges of an expandable
      // segment into one segment.
      var last = segs[segs.length - 1];
      if (s[5] && last && last.expandable && last.stream === s[4] && last.a + last.size === s[0]) {
        last.size += s[1];
        return;
      }
      segs.push({addr: hex(s[0]), a: s[0], size: s[1], stream: s[4], expandable: s[5] === 1, pool: "", blocks: [], states: []});
    });
    var live = [];
    ins.allocs.forEach(function (a) {
      if (a[3] > i) { return; }
      var endReq = a[4] >= 0 ? a[4] : (a[5] >= 0 ? a[5] : Infinity);
      var endDone = a[5] >= 0 ? a[5] : Infinity;
      if (i < endReq) {
        live.push({a: a, state: "allocated"});
      } else if (i < endDone) {
        live.push({a: a, state: "pending free"});
      }
    });
    live.sort(function (p, q) { return p.a[0] - q.a[0]; });
    var k = 0;
    segs.forEach(function (s) {
      var end = s.a + s.size, at = s.a;
      while (k < live.length && live[k].a[0] < s.a) { k++; }
      while (k < live.length && live[k].a[0] < end) {
        var b = live[k].a;
        if (b[0] > at) { s.blocks.push([at - s.a, b[0] - at, 0, -1]); s.states.push("free"); }
        s.blocks.push([b[0] - s.a, b[1], b[2], b[6]]);
        s.states.push(live[k].state);
        at = Math.max(at, b[0] + b[1]);
        k++;
      }
      if (at < end) { s.blocks.push([at - s.a, end - at, 0, -1]); s.states.push("free"); }
    });
    return segs;
  }

  // nearestState returns the precomputed state nearest to entry i.
  function nearestState(ins, i) {
    var best = null;
    ins.states.forEach(function (st) {
      if (!best || Math.abs(st.index - i) < Math.abs(best.index - i)) { best = st; }
    });
    return best;
  }

  function stackColors(dev) {
    var c = {};
    dev.groups.forEach(function (g, k) {
      if (g.stack >= 0) { c[g.stack] = palette[k % palette.length]; }
    });
    return c;
  }

  function blockColor(dev, state, stack) {
    if (state === "free") { return colorFree; }
    if (state === "pending free") { return colorPending; }
    return (dev.shownColor || dev.stackColor)[stack] || colorOther;
  }

  // showState draws a state in the device's panel: the heading, the
  // stacks holding the most bytes and the segment map.
  function showState(dev, segs, title) {
    var id = dev.section;
    var at = document.getElementById(id + "-state-at");
    if (at) { at.textContent = title; }
    var byStack = {}, total = 0, count = 0, reserved = 0;
    segs.forEach(function (s) {
      reserved += s.size;
      s.blocks.forEach(function (b, j) {
        if (s.states[j] !== "allocated") { return; }
        var e = byStack[b[3]] || (byStack[b[3]] = {stack: b[3], bytes: 0, count: 0});
        e.bytes += b[1];
        e.count++;
        total += b[1];
        count++;
      });
    });
    var tops = Object.keys(byStack).map(function (k) { return byStack[k]; });
    tops.sort(function (p, q) { return q.bytes - p.bytes || p.stack - q.stack; });
    // Without a timeline (no trace) the stacks holding the most bytes get
    // the palette's colours; with one, the colours of their groups.
    dev.shownColor = null;
    if (!dev.groups.length) {
      dev.shownColor = {};
      tops.slice(0, palette.length).forEach(function (e, k) {
        if (e.stack >= 0) { dev.shownColor[e.stack] = palette[k]; }
      });
    }
    var tb = document.getElementById(id + "-top");
    if (tb) {
      var h = "<tr><th>allocation stack (innermost first)<\/th><th class=\"num\">bytes<\/th><th class=\"num\">allocations<\/th><\/tr>";
      tops.slice(0, 10).forEach(function (e) {
        var frames = data.stacks[e.stack] || [];
        var first = frames.length ? frames[0] : "<no stack recorded>";
        var sw = "<span class=\"swatch\" style=\"background:" + blockColor(dev, "allocated", e.stack) + "\"><\/span>";
        h += "<tr><td class=\"frames\">" + (frames.length > 1 ? "<details><summary>" + sw + enc(first) + "<\/summary>" +
          frames.slice(1).map(enc).join("<br>") + "<\/details>" : sw + enc(first)) +
          "<\/td><td class=\"num\">" + fmtBytes(e.bytes) + "<\/td><td class=\"num\">" + fmtInt(e.count) + "<\/td><\/tr>";
      });
      h += "<tr class=\"total\"><td>" + enc(plural(tops.length, "stack") + ", " + plural(segs.length, "segment") + " (" + fmtBytes(reserved) + " reserved)") +
        "<\/td><td class=\"num\">" + fmtBytes(total) + "<\/td><td class=\"num\">" + fmtInt(count) + "<\/td><\/tr>";
      tb.innerHTML = h;
    }
    if (!dev.segChart) { return; }
    var shown = segs.slice().sort(function (p, q) { return q.size - p.size; }).slice(0, dev.maxSegments);
    dev.shownSegs = shown;
    var rows = [], names = [], widest = 1;
    shown.forEach(function (s, r) {
      widest = Math.max(widest, s.size);
      names.push(s.addr + " " + fmtBytes(s.size));
      s.blocks.forEach(function (b, j) {
        rows.push([r, b[0], b[0] + b[1], j, b[3], stateCodes[s.states[j]] || 0]);
      });
    });
    var note = document.getElementById(id + "-segnote");
    if (note) {
      note.textContent = "Each bar is one segment (cudaMalloc, or a mapped range of an expandable segment), its length proportional to its size; " +
        fmtInt(shown.length) + " of " + plural(segs.length, "segment") + ", largest first. Allocated blocks take the colour of their stack group in the timeline.";
    }
    var height = 70 + 22 * Math.min(Math.max(shown.length, 1), 60);
    var so = dev.segments.option;
    so.yAxis[0].data = names;
    var step = 1;
    while (step * 8 < widest) { step *= 2; }
    so.xAxis[0].interval = step;
    so.xAxis[0].max = Math.ceil(widest / step) * step;
    so.dataset = [{source: rows}];
    dev.segChart.setOption(so, true);
    dev.segChart.getDom().style.height = height + "px";
    dev.segChart.resize();
  }

  var stateCodes = {"allocated": 0, "pending free": 1, "free": 2};
  var stateNames = ["allocated", "pending free", "free"];

  function stateAtEntry(dev, i) {
    var ins = dev.inspect;
    if (ins.live) {
      return {segs: liveState(ins, i), title: "after entry " + fmtInt(i) + " (clicked on the timeline)"};
    }
    var st = nearestState(ins, i);
    if (!st) { return null; }
    var title = "after entry " + fmtInt(st.index) + " (the precomputed state nearest to entry " + fmtInt(i) + ")";
    return {segs: st.segments, title: title};
  }

  function renderBlock(dev) {
    return function (params, api) {
      var r = api.value(0);
      var s = api.coord([api.value(1), r]);
      var e = api.coord([api.value(2), r]);
      var h = api.size([0, 1])[1] * 0.7;
      var cs = params.coordSys;
      var rect = echarts.graphic.clipRectByRect(
        {x: s[0], y: s[1] - h / 2, width: Math.max(e[0] - s[0], 0.6), height: h},
        {x: cs.x, y: cs.y, width: cs.width, height: cs.height});
      if (!rect) { return null; }
      return {
        type: "rect",
        shape: rect,
        style: {
          fill: blockColor(dev, stateNames[api.value(5)], api.value(4)),
          stroke: rect.width > 4 ? "#ffffff" : null,
          lineWidth: 0.5
        }
      };
    };
  }

  function segmentTooltip(dev) {
    return function (p) {
      var v = p.value;
      var seg = dev.shownSegs && dev.shownSegs[v[0]];
      if (!seg) { return ""; }
      var b = seg.blocks[v[3]];
      var state = seg.states[v[3]];
      var head = "segment " + seg.addr + " (" + fmtBytes(seg.size) + ", stream " + seg.stream + (seg.pool ? ", pool " + seg.pool : "") + ")";
      var out = "<div class=\"tt-head\">" + enc(head) + "<\/div>";
      out += row("", "block", state + " at offset " + fmtBytes(b[0]));
      out += row("", "size", fmtBytes(b[1]));
      if (state !== "free") {
        out += row("", "requested", dev.requestedUnknown ? "? (see the notes)" : fmtBytes(b[2]));
      }
      if (b[3] >= 0) {
        out += framesHTML(b[3], 8);
      }
      return out;
    };
  }

  // overlaySMI draws nvidia-smi's memory.used on the timeline, as a line
  // of its own data (not the dataset), and raises the y axis to show it.
  // overlayData returns the nvidia-smi samples ([ms since the first
  // entry, bytes]) in the axis shown: by entry index, each sample at the
  // last entry at or before its time (rows: [index, time, ...] then).
  function overlayData(dev, rows) {
    if (!dev.byIndex) { return dev.overlay; }
    return dev.overlay.map(function (p) {
      var lo = 0, hi = rows.length - 1, k = 0;
      while (lo <= hi) {
        var m = (lo + hi) >> 1;
        if (rows[m][1] <= p[0]) { k = m; lo = m + 1; } else { hi = m - 1; }
      }
      return [rows.length ? rows[k][0] : 0, p[1]];
    });
  }

  // overlaySMI draws nvidia-smi's memory.used over the timeline. When it
  // would more than double the axis (a CUDA context, another library or
  // process holding memory PyTorch does not see), it gets an axis of its
  // own on the right, so that PyTorch's areas keep their scale; the
  // chart's element says which (data-smi-axis).
  function overlaySMI(dev, opt, rows) {
    var hi = 0, top = 0;
    dev.overlay.forEach(function (p) { hi = Math.max(hi, p[1]); });
    opt.yAxis = [].concat(opt.yAxis || []);
    opt.yAxis.forEach(function (ax) {
      if (typeof ax.max === "number") { top = Math.max(top, ax.max); }
    });
    var own = top > 0 && hi > 2 * top;
    opt.series = opt.series || [];
    opt.series.push({
      type: "line", name: "nvidia-smi memory.used", data: overlayData(dev, rows), showSymbol: false,
      lineStyle: {width: 2, color: "#e15759"}, itemStyle: {color: "#e15759"}, z: 5, yAxisIndex: own ? 1 : 0
    });
    [].concat(opt.legend || []).forEach(function (lg) {
      if (lg.data) { lg.data.push("nvidia-smi memory.used"); }
    });
    var t = pow2Ticks(hi);
    if (own) {
      opt.yAxis.push({
        type: "value", position: "right", min: 0, max: t[1], interval: t[0], name: "nvidia-smi",
        nameTextStyle: {color: "#e15759"}, splitLine: {show: false},
        axisLine: {show: true, lineStyle: {color: "#e15759"}},
        axisLabel: {formatter: fmtAxisBytes, color: "#e15759"}
      });
      [].concat(opt.grid || []).forEach(function (g) {
        g.right = String((parseInt(g.right, 10) || 0) + 60);
      });
    } else {
      opt.yAxis.forEach(function (ax) {
        if (typeof ax.max === "number" && ax.max < hi) {
          ax.interval = t[0];
          ax.max = t[1];
        }
      });
    }
    var el = document.getElementById(dev.timeline.id);
    if (el) { el.setAttribute("data-smi-axis", own ? "right" : "shared"); }
  }

  // pow2Ticks returns [interval, top] for bytes up to hi: the smallest
  // power of two that divides hi into at most eight steps, and the first
  // tick at or above hi (as html_charts.go htmlYTicks).
  function pow2Ticks(hi) {
    var iv = 1;
    while (iv * 8 < hi) { iv *= 2; }
    return [iv, Math.ceil(hi / iv) * iv];
  }

  function monitorTooltip(dev) {
    return function (params) {
      if (!params || !params.length) { return ""; }
      var out = "<div class=\"tt-head\">" + enc("t = " + (params[0].value[0] / 1000).toFixed(3) + " s") + "<\/div>";
      for (var i = 0; i < params.length; i++) {
        var p = params[i];
        var name = p.seriesName;
        if (/memory_stats/.test(name) && dev.steps && dev.steps[p.dataIndex]) {
          name += ", " + dev.steps[p.dataIndex];
        }
        out += row(p.marker, name, fmtBytes(p.value[1]));
      }
      return out;
    };
  }

  function init(id, option) {
    var el = document.getElementById(id);
    if (!el) { return null; }
    var chart = echarts.init(el, null, {renderer: "canvas"});
    chart.setOption(option);
    charts.push(chart);
    // When every chart has rendered once: data-drawn-ms (for
    // scripts/firstpaint.sh).
    var first = true;
    chart.on("finished", function () {
      if (!first) { return; }
      first = false;
      if (++drawn === charts.length) {
        document.documentElement.setAttribute("data-drawn-ms", String(Math.round(performance.now())));
        // The multi-resolution index after the first paint: once the
        // page has loaded and two frames have been drawn.
        var later = function () {
          requestAnimationFrame(function () { requestAnimationFrame(function () { setTimeout(loadDetail, 0); }); });
        };
        if (document.readyState === "complete") { later(); } else { window.addEventListener("load", later); }
      }
    });
    return chart;
  }

  // nearestRow returns the dataset row whose x is nearest to x.
  function nearestRow(rows, x) {
    var lo = 0, hi = rows.length - 1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (rows[mid][0] < x) { lo = mid + 1; } else { hi = mid; }
    }
    if (lo > 0 && Math.abs(rows[lo - 1][0] - x) <= Math.abs(rows[lo][0] - x)) { lo--; }
    return rows[lo];
  }

  // The most single allocations drawn on their own at once, and the most
  // points a zoomed window draws of the multi-resolution index.
  var maxSingles = 8, maxWindowPoints = 800;

  // maxRowsOf returns the most rows a zoomed window draws: one per two
  // pixels of the plot's width (mergeBuckets); width is the chart's.
  function maxRowsOf(width, opt) {
    var g = [].concat(opt.grid || [])[0] || {};
    var w = width - (parseInt(g.left, 10) || 0) - (parseInt(g.right, 10) || 0);
    return Math.max(Math.floor(w / 2), 100);
  }

  // activeOpacity is the opacity of the active line over rows: faint
  // where they are closer than two pixels (a long trace at full width,
  // one envelope per step), where its zigzag from each step's low to its
  // high would cover the areas with black.
  function activeOpacity(dev, rows) { return rows > dev.maxRows ? 0.25 : 1; }

  // The stack is drawn from the axis up: each area (each group, then each
  // single allocation drawn on its own) from 0 to the running sum of the
  // areas up to it (the columns from colCum on), opaque (its colour as it
  // showed at its opacity over white), the upper ones first, so that each
  // shows between the one below and its own top. ECharts' stack draws an
  // area between two running sums instead: on a long trace whose steps
  // zigzag, every area above the first that moves then has two edges as
  // tall as the zigzag, and filling those cost the browser more than the
  // rest of a zoom (Skia's rasterizer steps through every edge on every
  // line of pixels it spans); at full width, with one envelope per step,
  // half a second.
  function colCum(dev) { return colGroups + dev.groups.length + maxSingles; }

  // stackRows fills the running sums of rows (null where an area is not
  // drawn: a single allocation outside its life).
  function stackRows(dev, rows) {
    var n = dev.groups.length + maxSingles, cc = colCum(dev);
    for (var q = 0; q < rows.length; q++) {
      var r = rows[q], sum = 0;
      for (var j = 0; j < n; j++) {
        var v = r[colGroups + j];
        if (v === null || v === undefined) {
          r[colGroups + j] = null;
          r[cc + j] = null;
        } else {
          sum += v;
          r[cc + j] = sum;
        }
      }
    }
  }

  // stackZ is the z of the area at stack position j (0: the first group):
  // the lower drawn last, all between the markers' bands (z 1) and the
  // lines (z 2).
  function stackZ(dev, j) { return 2 - (j + 1) / (dev.groups.length + maxSingles + 2); }

  // opaque returns the colour "#rrggbb" at opacity a over white.
  function opaque(color, a) {
    var m = /^#([0-9a-f]{6})$/i.exec(color || "");
    if (!m) { return color; }
    var n = parseInt(m[1], 16), out = "#";
    [16, 8, 0].forEach(function (sh) {
      var c = Math.round(((n >> sh) & 255) * a + 255 * (1 - a));
      out += (c < 16 ? "0" : "") + c.toString(16);
    });
    return out;
  }

  // xExtent is the x axis's whole range for the axis shown: the first and
  // last row's, or the fixed end of a report of several files.
  function xExtent(dev) {
    var rows = dev.baseRows;
    var lo = rows[0][0], hi = rows[rows.length - 1][0];
    if (!dev.byIndex && dev.xMaxFixed !== null) { hi = Math.max(hi, dev.xMaxFixed); }
    if (!dev.byIndex && dev.xMinFixed !== null) { lo = Math.min(lo, dev.xMinFixed); }
    return [lo, hi];
  }

  // undelta returns the running sums of a delta-encoded column.
  function undelta(col, scale) {
    var out = new Float64Array(col.length), v = 0;
    for (var i = 0; i < col.length; i++) { v += col[i]; out[i] = v * scale; }
    return out;
  }

  // loadDetail reads the #snapview-detail island (after the first paint):
  // each device's levels (entry, time, reserved, active, allocated, then
  // the groups, as arrays) and single allocations; then redraws.
  function loadDetail() {
    var el = document.getElementById("snapview-detail");
    if (!el) { return; }
    var t0 = performance.now();
    var det = JSON.parse(el.textContent);
    det.devices.forEach(function (dd) {
      var dev = null;
      data.devices.forEach(function (d) { if (d.section === dd.section) { dev = d; } });
      if (!dev || !dev.chart) { return; }
      var u = dd.unit;
      dev.levels = dd.levels.map(function (lv) {
        return {buckets: lv.buckets, idx: undelta(lv.cols[0], 1), us: undelta(lv.cols[1], 1),
          cols: lv.cols.slice(2).map(function (c) { return undelta(c, u); })};
      });
      var sc = dd.singles, singles = [];
      if (sc.length) {
        var c = sc.map(function (col, k) { return undelta(col, k === 5 ? u : 1); });
        for (var i = 0; i < c[0].length; i++) {
          singles.push({start: c[0][i], end: c[1][i], freeCompleted: c[2][i], x0: c[3][i], x1: c[4][i],
            size: c[5][i], requested: c[6][i], addr: c[7][i], stack: c[8][i], group: c[9][i]});
        }
      }
      dev.singles = singles;
      document.documentElement.setAttribute("data-detail-read-ms", String(Math.round(performance.now() - t0)));
      redraw(dev, dev.chart);
    });
    // When it was read and drawn, and how long that took (for
    // scripts/firstpaint.sh).
    document.documentElement.setAttribute("data-detail", "1");
    document.documentElement.setAttribute("data-detail-ms", String(Math.round(performance.now() - t0)));
    document.documentElement.setAttribute("data-detail-at", String(Math.round(performance.now())));
  }

  // lowerBound returns the first k with a[k] >= v.
  function lowerBound(a, v) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < v) { lo = m + 1; } else { hi = m; } }
    return lo;
  }

  // windowEntries returns the entries [lo, hi] the x range ext shows.
  function windowEntries(dev, ext) {
    if (dev.byIndex) { return [Math.floor(ext[0]), Math.ceil(ext[1])]; }
    var lv = dev.levels[dev.levels.length - 1];
    if (!lv) {
      // The opening rows ([time, entry, ...]) have every entry.
      var rows = dev.baseRows, lo = 0, hi = rows.length;
      var x0 = rows.findIndex(function (r) { return r[0] >= ext[0]; });
      var x1 = rows.findIndex(function (r) { return r[0] > ext[1]; });
      lo = x0 > 0 ? rows[x0 - 1][1] : 0;
      hi = x1 >= 0 ? rows[x1][1] : rows[rows.length - 1][1];
      return [lo, hi];
    }
    var a = lowerBound(lv.us, Math.round(ext[0] * 1000)), b = lowerBound(lv.us, Math.round(ext[1] * 1000));
    return [a > 0 ? lv.idx[a - 1] : 0, b < lv.idx.length ? lv.idx[b] : lv.idx[lv.idx.length - 1]];
  }

  // roundExtent rounds an x range to the axis's unit (an entry, a
  // microsecond), so that the range a dataZoom action asks for and the one
  // ECharts settles on, a rounding error apart, give the same window.
  function roundExtent(dev, ext) {
    return dev.byIndex ? [Math.round(ext[0]), Math.round(ext[1])] :
      [Math.round(ext[0] * 1000) / 1000, Math.round(ext[1] * 1000) / 1000];
  }

  // windowPlan returns what redraw draws for the x range ext of the
  // axis shown: the rows from..to of the finest level with at most
  // maxWindowPoints points in the window (no level: the opening rows,
  // when the window is the whole trace or no level fits), the largest
  // single allocations live in it (indexes into dev.singles, in stack
  // order), the step bands and record_function ranges that reach into it,
  // and a key that is the same for two ranges drawn alike.
  function windowPlan(dev, ext) {
    ext = roundExtent(dev, ext);
    var full = xExtent(dev);
    var whole = ext[0] <= full[0] && ext[1] >= full[1];
    var win = windowEntries(dev, ext);
    var src = null, level = -1, from = 0, to = 0;
    if (!whole) {
      for (var l = dev.levels.length - 1; l >= 0; l--) {
        var lv = dev.levels[l];
        var a = lowerBound(lv.idx, win[0]), b = lowerBound(lv.idx, win[1] + 1);
        if (b - a <= maxWindowPoints) { src = lv; level = l; break; }
      }
    }
    var pts = null, merge = 1;
    if (src) {
      from = Math.max(lowerBound(src.idx, win[0]) - 1, 0);
      to = Math.min(lowerBound(src.idx, win[1] + 1) + 1, src.idx.length);
      merge = Math.ceil((to - from) / Math.max(dev.maxRows || 0, 100));
      if (merge > 1) { pts = mergeBuckets(dev, src, from, to, merge); }
    }
    // The largest single allocations live in the window, ordered by
    // start (earlier ones lower in the stack).
    var cand = [], singles = dev.singles;
    for (var k = 0; k < singles.length; k++) {
      var sg = singles[k];
      if (sg.start <= win[1] && sg.end > win[0]) { cand.push(k); }
    }
    cand.sort(function (p, q) { return singles[q].size - singles[p].size || singles[p].start - singles[q].start || p - q; });
    var shown = cand.slice(0, maxSingles);
    shown.sort(function (p, q) { return singles[p].start - singles[q].start || singles[q].size - singles[p].size || p - q; });
    // The markers that reach into the window: drawing all of a long
    // trace's steps costs ECharts a layout of each at every zoom.
    var marks = [];
    (dev.marks || []).forEach(function (list) {
      var m0 = 0, m1 = list.length;
      if (!whole) {
        while (m0 < m1 && list[m0][1].xAxis < ext[0]) { m0++; }
        while (m1 > m0 && list[m1 - 1][0].xAxis > ext[1]) { m1--; }
      }
      marks.push(m0, m1);
    });
    return {src: src, level: level, from: from, to: to, pts: pts, shown: shown, marks: marks,
      key: [level, from, to, merge, shown.join(","), marks.join(",")].join(":")};
  }

  // mergeBuckets returns the points from..to of level lv to draw when
  // they are more than the plot has room for (dev.maxRows, one per two
  // pixels: the stacked areas' zigzag between a bucket's minimum and
  // maximum costs the browser a path edge as tall as the zigzag, and
  // closer than that it cannot be seen): the first minimum and the first
  // maximum of allocated bytes of each run of merge buckets (as
  // timeline.DownsampleMinMax with buckets merge times wider), and the
  // first and the last point. Each is still an entry of the trace with
  // every series' exact value there.
  function mergeBuckets(dev, lv, from, to, merge) {
    var alloc = lv.cols[colAllocated - colReserved], idx = lv.idx;
    var nb = lv.buckets, n = Math.max(dev.entries, 1);
    var out = [from];
    var p = from + 1;
    while (p < to - 1) {
      var sb = Math.floor(Math.floor(idx[p] * nb / n) / merge);
      var lo = p, hi = p;
      for (p++; p < to - 1 && Math.floor(Math.floor(idx[p] * nb / n) / merge) === sb; p++) {
        if (alloc[p] < alloc[lo]) { lo = p; }
        if (alloc[p] > alloc[hi]) { hi = p; }
      }
      if (lo === hi) { out.push(lo); } else { out.push(Math.min(lo, hi), Math.max(lo, hi)); }
    }
    if (to - 1 > from) { out.push(to - 1); }
    return out;
  }

  // redraw draws the window the x axis shows (windowPlan) unless it is
  // drawn already (a zoom drawn before ECharts handled it: hookZoom);
  // zoom says it follows a dataZoom action.
  function redraw(dev, chart, zoom) {
    if (!dev.levels || !dev.singles) { return; }
    var ext = chart.getModel().getComponent("xAxis", 0).axis.scale.getExtent();
    var plan = windowPlan(dev, ext);
    if (plan.key === dev.drawnKey) { return; }
    drawWindow(dev, chart, plan, false);
    if (zoom) {
      // A zoom hookZoom could not draw first: laid out twice.
      var el = document.documentElement;
      el.setAttribute("data-zoom-late", String(Number(el.getAttribute("data-zoom-late") || 0) + 1));
    }
  }

  // drawWindow draws a windowPlan: the rows of its level, the single
  // allocations taken out of their groups into series of their own, the
  // markers of the window. A single allocation's value is null (nothing
  // drawn) outside its life but at the first row after it, which closes
  // its step: an area along the whole window, even of height 0, costs the
  // browser a path as long as the window's to fill and stroke. With lazy,
  // ECharts lays the chart out at its next update (the dataZoom action
  // under way) rather than now. It notes on the page element what it drew
  // (data-zoom-level, -rows, -singles, -ms).
  function drawWindow(dev, chart, plan, lazy) {
    var t0 = performance.now();
    var nG = dev.groups.length, width = colGroups + nG + maxSingles;
    var rows = [], src = plan.src;
    if (src) {
      var cols = src.cols, nc = cols.length;
      var pts = plan.pts;
      for (var j = plan.from; j < plan.to; j++) {
        var p = j;
        if (pts) {
          if (j - plan.from >= pts.length) { break; }
          p = pts[j - plan.from];
        }
        var r = new Array(width);
        var xi = src.idx[p], xt = src.us[p] / 1000;
        r[0] = dev.byIndex ? xi : xt;
        r[1] = dev.byIndex ? xt : xi;
        for (var c = 0; c < nc; c++) { r[colReserved + c] = cols[c][p]; }
        rows.push(r);
      }
    } else {
      dev.baseRows.forEach(function (b) {
        var r = b.slice(0, colGroups + nG);
        r.length = width;
        rows.push(r);
      });
    }
    var shown = plan.shown.map(function (k) { return dev.singles[k]; });
    var ie = dev.byIndex ? 0 : 1;
    for (var k = 0; k < maxSingles; k++) {
      var s = shown[k], col = colGroups + nG + k, live = false;
      for (var q = 0; q < rows.length; q++) {
        var row = rows[q], i = row[ie], v = null;
        if (s && s.start <= i && i < s.end) {
          v = s.size;
          row[colGroups + s.group] -= v;
          live = true;
        } else if (live) {
          v = 0;
          live = false;
        }
        row[col] = v;
      }
    }
    stackRows(dev, rows);
    dev.shownSingles = shown;
    dev.rows = rows;
    // The singles' series are made once; later only the colours that
    // change are sent with the rows, and the markers when they change.
    var first = !dev.singleColors, series = [], changed = first;
    dev.singleColors = dev.singleColors || [];
    for (var b = 0; b < dev.singleBase; b++) { series.push({}); }
    var mk = plan.marks, was = dev.marksShown || [];
    if (dev.marks && mk.join(",") !== was.join(",")) {
      series[nG] = {markArea: {data: dev.marks[0].slice(mk[0], mk[1])}};
      series[nG + 1] = {markArea: {data: dev.marks[1].slice(mk[2], mk[3])}};
      dev.marksShown = mk;
      changed = true;
    }
    var op = activeOpacity(dev, rows.length);
    if (op !== dev.activeOpacity) {
      series[nG].lineStyle = {opacity: op};
      dev.activeOpacity = op;
      changed = true;
    }
    for (var k = 0; k < maxSingles; k++) {
      var s = shown[k], col = colorOther;
      if (s && !(dev.groups[s.group] && dev.groups[s.group].stack < 0)) {
        col = dev.stackColor[s.stack] || palette[s.group % palette.length];
      }
      if (first) {
        series.push({
          type: "line", name: "allocation " + (k + 1), step: "end", showSymbol: false,
          encode: {x: 0, y: colCum(dev) + nG + k}, z: stackZ(dev, nG + k), triggerLineEvent: true, emphasis: {focus: "none"},
          lineStyle: {width: 0.6, color: "#ffffff"}, itemStyle: {color: col},
          areaStyle: {opacity: 1, color: opaque(col, 0.95)}
        });
      } else {
        series.push(dev.singleColors[k] === col ? {} : {itemStyle: {color: col}, areaStyle: {color: opaque(col, 0.95)}});
        changed = changed || dev.singleColors[k] !== col;
      }
      dev.singleColors[k] = col;
    }
    var upd = {dataset: [{source: rows}]};
    if (changed) { upd.series = series; }
    chart.setOption(upd, lazy ? {lazyUpdate: true} : undefined);
    dev.drawnKey = plan.key;
    var el = document.documentElement;
    el.setAttribute("data-zoom-level", String(plan.level));
    el.setAttribute("data-zoom-rows", String(rows.length));
    el.setAttribute("data-zoom-singles", String(shown.length));
    el.setAttribute("data-zoom-ms", String(Math.round((performance.now() - t0) * 10) / 10));
    el.setAttribute("data-redraws", String(Number(el.getAttribute("data-redraws") || 0) + 1));
  }

  // zoomExtent returns the x range a dataZoom action asks for, as
  // ECharts' AxisProxy settles it (dataZoom/AxisProxy.ts
  // calculateDataWindow and _setAxisModel): percentages of the whole axis
  // where they are given, else values; a window reaching past the axis
  // slid back into it, its span kept (helper/sliderMove.ts); a bound
  // inside the axis written with the digits getPixelPrecision gives for
  // 500 pixels. Null where the action leaves a bound as it was.
  function zoomExtent(dev, payload) {
    var p = payload.batch ? payload.batch[0] : payload;
    if (!p) { return null; }
    var full = xExtent(dev), span = full[1] - full[0];
    var pct = typeof p.start === "number" && typeof p.end === "number";
    var w = pct ? [p.start, p.end] : [p.startValue, p.endValue];
    if (typeof w[0] !== "number" || typeof w[1] !== "number" || isNaN(w[0]) || isNaN(w[1])) { return null; }
    w.sort(function (a, b) { return a - b; });
    var lim = pct ? [0, 100] : full;
    var width = Math.min(w[1] - w[0], lim[1] - lim[0]);
    var lo = Math.min(Math.max(w[0], lim[0]), lim[1] - width), hi = lo + width;
    var pw = pct ? [lo, hi] : [lo, hi].map(function (v) { return span > 0 ? (v - full[0]) / span * 100 : 0; });
    var vw = pct ? [lo, hi].map(function (v) { return v / 100 * span + full[0]; }) : [lo, hi];
    var digits = Math.floor(Math.log(vw[1] - vw[0]) / Math.LN10);
    var prec = Math.min(Math.max(-digits + Math.round(Math.log(500) / Math.LN10), 0), 20);
    if (!isFinite(prec)) { prec = 20; }
    return [pw[0] === 0 ? full[0] : +vw[0].toFixed(prec), pw[1] === 100 ? full[1] : +vw[1].toFixed(prec)];
  }

  // hookZoom makes a zoom cost one layout rather than two. ECharts lays
  // the chart out when it handles a dataZoom action, and a redraw after it
  // would lay it out again with the window's rows: so the window's rows go
  // in first, with lazyUpdate, and the action's own layout draws them;
  // the datazoom event then finds the window drawn (redraw does nothing).
  // The actions come through chart.dispatchAction (the page's API) and
  // through the ExtensionAPI the dataZoom components dispatch with
  // (chart._api in ECharts 5.4.3, third_party/echarts); where either is
  // missing, or ECharts is amid an update (its __flagInMainProcess, when
  // it queues the action and would ignore setOption), the zoom is drawn
  // after the action, as before.
  function hookZoom(dev, chart) {
    [chart, chart._api].forEach(function (obj) {
      if (!obj || typeof obj.dispatchAction !== "function") { return; }
      var orig = obj.dispatchAction;
      obj.dispatchAction = function (payload) {
        if (payload && payload.type === "dataZoom" && dev.levels && dev.singles && !chart.__flagInMainProcess) {
          var ext = zoomExtent(dev, payload);
          if (ext) {
            var plan = windowPlan(dev, ext);
            if (plan.key !== dev.drawnKey) { drawWindow(dev, chart, plan, true); }
          }
        }
        return orig.apply(this, arguments);
      };
    });
  }

  // singleHTML describes a single allocation: its size, requested size,
  // stack, and its alloc and free entries with their times.
  function singleHTML(dev, s) {
    function at(i, x) {
      var t = "entry " + fmtInt(i);
      if (dev.xIsTime && x >= 0) { t += ", t = " + secs(x / 1000); }
      return t;
    }
    var out = "<div class=\"tt-head\">" + enc("allocation of " + fmtBytes(s.size) + " at " + hex(s.addr)) + "<\/div>";
    out += row("", "size", fmtBytes(s.size));
    out += row("", "requested", dev.requestedUnknown ? "? (see the notes)" : fmtBytes(s.requested));
    out += row("", "allocated", s.start < 0 ? "before the trace" : "after " + at(s.start, s.x0));
    out += row("", "freed", s.x1 < 0 && s.freeCompleted < 0 ? "not by the end of the trace" : "at " + at(s.end, s.x1) +
      (s.freeCompleted >= 0 && s.freeCompleted !== s.end ? " (free_completed at entry " + fmtInt(s.freeCompleted) + ")" : ""));
    out += row("", "group", dev.groups[s.group] ? dev.groups[s.group].label : "");
    if (s.where) { out += row("", "in its segment", s.where); }
    out += s.stack >= 0 ? framesHTML(s.stack, 40) : "<div class=\"tt-frame\">&lt;no stack recorded&gt;<\/div>";
    return out;
  }

  // pin keeps a single allocation's details under the chart, saying
  // where its block sits in its segment in the state st shows (null: no
  // state shown).
  function pin(dev, s, st) {
    dev.pinned = s;
    s.where = "";
    if (st) {
      st.segs.forEach(function (sg) {
        var a = sg.a !== undefined ? sg.a : parseInt(sg.addr, 16);
        if (s.addr >= a && s.addr < a + sg.size) {
          s.where = "segment " + sg.addr + " (" + fmtBytes(sg.size) + "), at offset " + fmtBytes(s.addr - a) + ", " + st.title;
        }
      });
      if (!s.where) { s.where = "not in the state shown (" + st.title + ")"; }
    }
    var hover = document.getElementById(dev.section + "-hover");
    if (hover) { hover.innerHTML = "<div class=\"tt-hint\">pinned (click elsewhere on the chart to unpin)<\/div>" + singleHTML(dev, s); }
    document.documentElement.setAttribute("data-pinned", String(s.start) + ":" + String(s.addr));
  }

  function setupTimeline(dev) {
    var opt = dev.timeline.option;
    var rows = opt.dataset[0].source;
    var nGroups = dev.groups.length;
    opt.tooltip = opt.tooltip || {};
    opt.tooltip.formatter = timelineTooltip(dev);
    opt.tooltip.confine = true;
    opt.tooltip.axisPointer = {type: "line"};
    (opt.yAxis || []).forEach(function (ax) {
      ax.axisLabel = ax.axisLabel || {};
      ax.axisLabel.formatter = fmtAxisBytes;
      if (dev.yInterval > 0) { ax.interval = dev.yInterval; }
    });
    // The legend sits beside the chart: reserved and active first, long
    // names wrapped, never cut.
    var names = ["reserved", "active"];
    opt.series.forEach(function (s, k) {
      if (k < nGroups) {
        names.push({name: s.name, icon: "rect"});
        s.triggerLineEvent = true;
        s.emphasis = {focus: "none"};
        // Drawn from the axis up (stackRows).
        delete s.stack;
        s.encode = {x: 0, y: colCum(dev) + k};
        s.z = stackZ(dev, k);
        var as = s.areaStyle || {};
        s.areaStyle = {opacity: 1, color: opaque(as.color, as.opacity === undefined ? 1 : as.opacity)};
      }
    });
    stackRows(dev, rows);
    opt.legend = opt.legend || [{}];
    (Array.isArray(opt.legend) ? opt.legend : [opt.legend]).forEach(function (lg) {
      lg.data = names;
      lg.textStyle = {width: 230, overflow: "break", fontSize: 11, lineHeight: 13};
      lg.pageIconSize = 10;
    });
    if (dev.overlay && dev.overlay.length) {
      overlaySMI(dev, opt, rows);
    }
    // The single allocations drawn on their own get series of their own
    // after these, on top of the groups' stack, once the detail island
    // is read (redraw), so that the first paint does without them.
    dev.rows = rows;
    dev.singleBase = opt.series.length;
    dev.shownSingles = [];
    var xm = [].concat(opt.xAxis || [])[0] || {};
    dev.xMaxFixed = typeof xm.max === "number" ? xm.max : null;
    dev.xMinFixed = typeof xm.min === "number" ? xm.min : null;
    var box = document.getElementById(dev.timeline.id);
    dev.maxRows = maxRowsOf(box ? box.clientWidth : 0, opt);
    dev.activeOpacity = activeOpacity(dev, rows.length);
    opt.series.forEach(function (s) {
      if (s.name === "active") { s.lineStyle = s.lineStyle || {}; s.lineStyle.opacity = dev.activeOpacity; }
    });
    var chart = init(dev.timeline.id, opt);
    if (!chart) { return; }
    dev.chart = chart;
    applyAxis(dev, chart, null, false);

    // Hovering an area shows its allocation stack under the chart.
    var hover = document.getElementById(dev.section + "-hover");
    chart.on("mouseover", function (p) {
      if (!hover || p.componentType !== "series" || dev.pinned) { return; }
      var sg = dev.shownSingles[p.seriesIndex - dev.singleBase];
      if (p.seriesIndex >= dev.singleBase && sg) {
        hover.innerHTML = singleHTML(dev, sg);
        return;
      }
      if (p.seriesIndex >= nGroups) { return; }
      var g = dev.groups[p.seriesIndex];
      hover.innerHTML = "<div class=\"tt-head\">" + enc(g.label) + "<\/div>" +
        (g.stack >= 0 ? framesHTML(g.stack, 40) : "<div class=\"tt-frame\">" + enc("the allocations of every stack not drawn on its own") + "<\/div>");
    });

    // The x axis switch.
    document.querySelectorAll("input[name=axis-" + dev.section + "]").forEach(function (inp) {
      inp.checked = (inp.value === "index") === dev.byIndex;
      inp.addEventListener("change", function () {
        var byIndex = inp.value === "index";
        if (byIndex === dev.byIndex) { return; }
        dev.byIndex = byIndex;
        rows.forEach(function (r) { var t = r[0]; r[0] = r[1]; r[1] = t; });
        dev.rows = rows;
        applyAxis(dev, chart, rows, true);
        redraw(dev, chart);
      });
    });

    // Zooming redraws the window from the multi-resolution index.
    hookZoom(dev, chart);
    chart.on("datazoom", function () {
      // After the action (ECharts refuses setOption within it), before
      // the browser paints.
      if (dev.zoomPending) { return; }
      dev.zoomPending = true;
      Promise.resolve().then(function () { dev.zoomPending = false; redraw(dev, chart, true); });
    });
    // Clicking a single allocation pins it: its details stay under the
    // chart, with where it sits in its segment in the state the click
    // shows (ECharts' series click comes before the chart's own below).
    // Both handlers run for one click, in either order: the pin waits for
    // the end of the click.
    function afterClick() {
      if (dev.clickPending) { return; }
      dev.clickPending = true;
      Promise.resolve().then(function () {
        var sg = dev.pinNext, st = dev.clickState;
        dev.clickPending = false;
        dev.pinNext = dev.clickState = null;
        if (sg) { pin(dev, sg, st); } else { dev.pinned = null; }
      });
    }
    chart.on("click", function (p) {
      var sg = p.componentType === "series" && dev.shownSingles[p.seriesIndex - dev.singleBase];
      if (!sg || p.seriesIndex < dev.singleBase) { return; }
      dev.pinNext = sg;
      afterClick();
    });
    // Clicking shows the allocator state after that entry.
    if (dev.inspect) {
      chart.getZr().on("click", function (e) {
        afterClick();
        var pt = [e.offsetX, e.offsetY];
        if (!chart.containPixel({gridIndex: 0}, pt)) { return; }
        var x = chart.convertFromPixel({gridIndex: 0}, pt)[0];
        var r = nearestRow(dev.rows, x);
        var i = dev.byIndex ? Math.max(0, Math.min(Math.round(x), dev.entries - 1)) : entryOf(dev, r);
        var st = stateAtEntry(dev, i);
        if (st) {
          showState(dev, st.segs, st.title);
          document.documentElement.setAttribute("data-inspected", String(i));
        }
        dev.clickState = st;
      });
    }
  }

  function setupSegments(dev) {
    var so = dev.segments.option;
    so.series.forEach(function (s) { s.renderItem = renderBlock(dev); });
    so.tooltip = so.tooltip || {};
    so.tooltip.formatter = segmentTooltip(dev);
    so.tooltip.confine = true;
    (so.xAxis || []).forEach(function (ax) {
      ax.axisLabel = ax.axisLabel || {};
      ax.axisLabel.formatter = fmtAxisBytes;
    });
    dev.segChart = init(dev.segments.id, so);
  }

  data.devices.forEach(function (dev) {
    dev.byIndex = !!dev.xByIndex;
    dev.stackColor = stackColors(dev);
    dev.maxSegments = (dev.inspect && dev.inspect.maxSegments) || 200;
    if (dev.timeline) {
      var rows = dev.timeline.option.dataset[0].source;
      dev.baseRows = rows;
      dev.hasDetail = !!dev.detail;
      dev.entries = rows.length ? Math.round(rows[rows.length - 1][dev.byIndex ? 0 : 1]) + 1 : 0;
      setupTimeline(dev);
    }
    if (dev.monitor) {
      var mo = dev.monitor.option;
      mo.tooltip = mo.tooltip || {};
      mo.tooltip.formatter = monitorTooltip(dev);
      mo.tooltip.confine = true;
      var mhi = 0;
      (mo.series || []).forEach(function (s) {
        (s.data || []).forEach(function (p) {
          var v = p && p.value ? p.value : p;
          if (v && v.length > 1) { mhi = Math.max(mhi, v[1]); }
        });
      });
      (mo.yAxis || []).forEach(function (ax) {
        ax.axisLabel = ax.axisLabel || {};
        ax.axisLabel.formatter = fmtAxisBytes;
        if (mhi > 0) {
          var t = pow2Ticks(mhi);
          ax.interval = t[0];
          ax.max = t[1];
        }
      });
      (mo.xAxis || []).forEach(function (ax) {
        ax.axisLabel = ax.axisLabel || {};
        ax.axisLabel.formatter = function (v) { return String(Math.round(v) / 1000) + " s"; };
      });
      (mo.dataZoom || []).forEach(function (dz) {
        if (dz.type === "slider") {
          dz.labelFormatter = function (v) { return (v / 1000).toFixed(3) + " s"; };
        }
      });
      init(dev.monitor.id, mo);
    }
    if (dev.segments) {
      setupSegments(dev);
      showState(dev, dev.segmentInfo, dev.segmentsAt);
    }
  });

  // snapviewShowEntry shows the allocator state after entry i of a
  // device, as a click on the timeline does (for tests and the console).
  window.snapviewShowEntry = function (device, i) {
    var ok = false;
    data.devices.forEach(function (dev) {
      if (dev.device !== device || !dev.inspect) { return; }
      var st = stateAtEntry(dev, i);
      if (st) { showState(dev, st.segs, st.title); ok = true; }
    });
    return ok;
  };

  // snapviewShownSingles returns the single allocations the timeline of
  // a device section draws on their own, in stack order (for tests and
  // the console).
  window.snapviewShownSingles = function (section) {
    var out = null;
    data.devices.forEach(function (dev) {
      if (dev.section === section) {
        out = (dev.shownSingles || []).map(function (s) {
          return {start: s.start, end: s.end, size: s.size, requested: s.requested, addr: s.addr, stack: s.stack, group: s.group};
        });
      }
    });
    return out;
  };

  window.addEventListener("resize", function () {
    charts.forEach(function (c) { c.resize(); });
    data.devices.forEach(function (dev) {
      if (dev.chart) {
        dev.maxRows = maxRowsOf(dev.chart.getWidth(), dev.timeline.option);
        dev.drawnKey = null;
        redraw(dev, dev.chart);
      }
    });
  });
  // For tests: how many charts were drawn and how long it took.
  document.documentElement.setAttribute("data-charts", String(charts.length));
  document.documentElement.setAttribute("data-render-ms", String(Math.round(performance.now() - started)));
  document.documentElement.setAttribute("data-ready-ms", String(Math.round(performance.now())));
})();
