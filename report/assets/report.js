// report.js draws the charts of a snapview report. It reads the JSON data
// island (#snapview-data): for each device the ECharts options built in Go
// and what the tooltips need. It must never contain a closing script tag:
// write "<\/" in strings (report.go checks).
(function () {
  "use strict";
  var started = performance.now();
  var data = JSON.parse(document.getElementById("snapview-data").textContent);
  var enc = echarts.format.encodeHTML;
  var charts = [];

  function fmtBytes(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    var neg = n < 0, v = Math.abs(n), u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    var s = u === 0 ? String(Math.round(v)) + " B" : v.toFixed(2) + " " + units[u];
    return neg ? "-" + s : s;
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

  function timelineTooltip(dev) {
    var nGroups = dev.groups.length;
    return function (params) {
      if (!params || !params.length) { return ""; }
      var r = params[0].value;
      var head = dev.xIsTime ? "t = " + (r[0] / 1000).toFixed(6) + " s" : "after entry " + r[0];
      var out = "<div class=\"tt-head\">" + enc(head) + "<\/div>";
      out += row("", "reserved", fmtBytes(r[1]));
      out += row("", "active", fmtBytes(r[2]));
      out += row("", "allocated", fmtBytes(r[3]));
      var groups = [];
      for (var i = 0; i < params.length; i++) {
        var g = params[i].seriesIndex;
        if (g < nGroups && r[4 + g] > 0) {
          groups.push({g: g, bytes: r[4 + g], marker: params[i].marker});
        }
      }
      groups.sort(function (a, b) { return b.bytes - a.bytes || a.g - b.g; });
      for (var j = 0; j < groups.length; j++) {
        var grp = dev.groups[groups[j].g];
        out += row(groups[j].marker, grp.label, fmtBytes(groups[j].bytes));
        if (grp.stack >= 0 && j < 4) {
          out += framesHTML(grp.stack, 3);
        }
      }
      return out;
    };
  }

  var blockColors = ["#4e79a7", "#e15759", "#e8e8e8"];
  var blockStates = ["allocated", "pending free", "free"];

  function renderBlock(params, api) {
    var r = api.value(0);
    var s = api.coord([api.value(1), r]);
    var e = api.coord([api.value(2), r]);
    var h = api.size([0, 1])[1] * 0.7;
    var cs = params.coordSys;
    var rect = echarts.graphic.clipRectByRect(
      {x: s[0], y: s[1] - h / 2, width: Math.max(e[0] - s[0], 0.6), height: h},
      {x: cs.x, y: cs.y, width: cs.width, height: cs.height});
    if (!rect) { return null; }
    var state = api.value(3);
    return {
      type: "rect",
      shape: rect,
      style: {
        fill: blockColors[state],
        stroke: rect.width > 4 ? "#ffffff" : null,
        lineWidth: 0.5
      }
    };
  }

  function segmentTooltip(dev) {
    return function (p) {
      var v = p.value;
      var seg = dev.segmentInfo[v[0]];
      if (!seg) { return ""; }
      var b = seg.blocks[v[4]];
      var state = seg.states[v[4]];
      var out = "<div class=\"tt-head\">" + enc("segment " + seg.addr + " (" + fmtBytes(seg.size) +
        ", stream " + seg.stream + ", pool " + seg.pool + ")") + "<\/div>";
      out += row("", "block", state + " at offset " + fmtBytes(b[0]));
      out += row("", "size", fmtBytes(b[1]));
      if (state !== "free") {
        out += row("", "requested", fmtBytes(b[2]));
      }
      if (b[3] >= 0) {
        out += framesHTML(b[3], 8);
      }
      return out;
    };
  }

  // overlaySMI draws nvidia-smi's memory.used on the timeline, as a line
  // of its own data (not the dataset), and raises the y axis to show it.
  function overlaySMI(dev, opt) {
    var hi = 0;
    dev.overlay.forEach(function (p) { hi = Math.max(hi, p[1]); });
    opt.series = opt.series || [];
    opt.series.push({
      type: "line", name: "nvidia-smi memory.used", data: dev.overlay, showSymbol: false,
      lineStyle: {width: 2, color: "#e15759"}, itemStyle: {color: "#e15759"}, z: 5
    });
    [].concat(opt.legend || []).forEach(function (lg) {
      if (lg.data) { lg.data.push("nvidia-smi memory.used"); }
    });
    (opt.yAxis || []).forEach(function (ax) {
      if (typeof ax.max === "number" && ax.max < hi) {
        var t = pow2Ticks(hi);
        ax.interval = t[0];
        ax.max = t[1];
      }
    });
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
    if (!el) { return; }
    var chart = echarts.init(el, null, {renderer: "canvas"});
    chart.setOption(option);
    charts.push(chart);
  }

  data.devices.forEach(function (dev) {
    if (dev.timeline) {
      var opt = dev.timeline.option;
      opt.tooltip = opt.tooltip || {};
      opt.tooltip.formatter = timelineTooltip(dev);
      opt.tooltip.confine = true;
      opt.tooltip.axisPointer = {type: "line"};
      (opt.yAxis || []).forEach(function (ax) {
        ax.axisLabel = ax.axisLabel || {};
        ax.axisLabel.formatter = fmtAxisBytes;
        if (dev.yInterval > 0) { ax.interval = dev.yInterval; }
      });
      // The x axis is a time axis (see html_charts.go): milliseconds since
      // the first entry, or entry indexes.
      (opt.xAxis || []).forEach(function (ax) {
        ax.axisLabel = ax.axisLabel || {};
        ax.axisLabel.formatter = dev.xIsTime ?
          function (v) { return String(Math.round(v) / 1000) + " s"; } :
          function (v) { return String(Math.round(v)); };
      });
      (opt.dataZoom || []).forEach(function (dz) {
        if (dz.type === "slider") {
          dz.labelFormatter = dev.xIsTime ?
            function (v) { return (v / 1000).toFixed(3) + " s"; } :
            function (v) { return String(Math.round(v)); };
        }
      });
      if (dev.overlay && dev.overlay.length) {
        overlaySMI(dev, opt);
      }
      init(dev.timeline.id, opt);
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
      var so = dev.segments.option;
      so.series.forEach(function (s) { s.renderItem = renderBlock; });
      so.tooltip = so.tooltip || {};
      so.tooltip.formatter = segmentTooltip(dev);
      so.tooltip.confine = true;
      (so.xAxis || []).forEach(function (ax) {
        ax.axisLabel = ax.axisLabel || {};
        ax.axisLabel.formatter = function (v) { return Math.round(v * 100) + "%"; };
      });
      init(dev.segments.id, so);
    }
  });

  window.addEventListener("resize", function () {
    charts.forEach(function (c) { c.resize(); });
  });
  // For tests: how many charts were drawn and how long it took.
  document.documentElement.setAttribute("data-charts", String(charts.length));
  document.documentElement.setAttribute("data-render-ms", String(Math.round(performance.now() - started)));
  document.documentElement.setAttribute("data-ready-ms", String(Math.round(performance.now())));
})();
