// The stylesheet and the one script of `scout report --html` (observer/cli/report_html.h).
#include "observer/cli/report_html.h"

namespace scout::cli {

const char* report_css() {
  return R"CSS(
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#eaeef2;--bg:#f3f5f7;--card:#fff;--link:#0550ae;
--hang:#cf222e;--deadlock:#82071e;--crash:#57606a;--stall:#bc4c00;--sdc:#8250df;--nan:#bf3989;--desync:#1b7c83;
--straggler:#b35900;--slowlink:#0969da;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","DejaVu Sans",Arial,sans-serif;
color:var(--fg);background:var(--bg)}
a{color:var(--link);text-decoration:none}a:hover{text-decoration:underline}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace}
code{font-size:12.5px;background:var(--soft);padding:1px 5px;border-radius:4px}
.wrap{max-width:1180px;margin:0 auto;padding:0 24px}
header.top{background:#0d1117;color:#f0f6fc;padding:18px 0 20px;border-bottom:3px solid #30363d}
header.top .brand{font-size:12px;letter-spacing:.08em;text-transform:uppercase;color:#8b949e;font-weight:600}
header.top h1{margin:4px 0 2px;font-size:22px;font-weight:600;word-break:break-all}
header.top .sub{color:#c9d1d9;font-size:13px}
main{max-width:1180px;margin:0 auto;padding:8px 24px 32px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:14px 0;
box-shadow:0 1px 2px rgba(31,35,40,.04)}
h2{font-size:16px;margin:0 0 12px;font-weight:600;display:flex;align-items:center;flex-wrap:wrap;gap:8px}
section.tiles{display:grid;grid-template-columns:repeat(5,minmax(0,1fr));gap:12px;background:none;border:0;padding:0;box-shadow:none}
.tile{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 14px;border-top:3px solid #8c959f}
.tile.alert{border-top-color:var(--bad)}.tile.warn{border-top-color:var(--warn)}.tile.good{border-top-color:var(--ok)}
.tile-label{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em;font-weight:600}
.tile-value{font-size:22px;font-weight:600;margin:2px 0}
.tile-detail{font-size:12.5px;color:var(--muted)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0 0 10px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;word-break:break-word}
.warning{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px;margin:0 0 12px}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;color:var(--muted);font-weight:600;font-size:12px;border-bottom:1px solid var(--line);padding:6px 8px;
white-space:nowrap}
td{border-bottom:1px solid var(--soft);padding:6px 8px;vertical-align:top}
td.num,th.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
td.strong{font-weight:600}td.nowrap{white-space:nowrap}
tr.hl td,tr:target td{background:#fff8c5}
.badge{display:inline-block;padding:1px 9px;border-radius:999px;font-size:12px;font-weight:600;color:#fff;background:#6e7781;
line-height:18px;white-space:nowrap}
.badge.kind-hang{background:var(--hang)}.badge.kind-deadlock{background:var(--deadlock)}.badge.kind-crash{background:var(--crash)}
.badge.kind-stall{background:var(--stall)}.badge.kind-sdc{background:var(--sdc)}.badge.kind-nan{background:var(--nan)}
.badge.kind-desync{background:var(--desync)}.badge.kind-straggler{background:var(--straggler)}
.badge.kind-slowlink{background:var(--slowlink)}
.badge.ck-verified,.badge.pass{background:var(--ok)}.badge.ck-rejected,.badge.fail{background:var(--bad)}
.badge.none{background:#8c959f}
.badge.ck-candidate{background:#8c959f}.badge.inconclusive{background:var(--warn)}
.verdict{font-size:12px;font-weight:600;border-radius:4px;padding:0 6px;line-height:18px;border:1px solid}
.verdict.attributed{color:#0a3069;border-color:#54aeff;background:#ddf4ff}
.verdict.inconclusive{color:#6e4b00;border-color:#d4a72c;background:#fff8c5}
.status{font-size:12px;font-weight:600;color:var(--muted)}
.status.open::before{content:"";display:inline-block;width:8px;height:8px;border-radius:50%;background:var(--bad);margin-right:5px}
.status.closed::before{content:"";display:inline-block;width:8px;height:8px;border-radius:50%;background:#8c959f;margin-right:5px}
section.finding{border-left:4px solid #8c959f}
section.finding.kind-hang{border-left-color:var(--hang)}section.finding.kind-deadlock{border-left-color:var(--deadlock)}
section.finding.kind-crash{border-left-color:var(--crash)}section.finding.kind-stall{border-left-color:var(--stall)}
section.finding.kind-sdc{border-left-color:var(--sdc)}section.finding.kind-nan{border-left-color:var(--nan)}
section.finding.kind-desync{border-left-color:var(--desync)}section.finding.kind-straggler{border-left-color:var(--straggler)}
section.finding.kind-slowlink{border-left-color:var(--slowlink)}
section.finding.hl,section.finding:target{box-shadow:0 0 0 3px #ffd33d}
.fid{font-size:16px;color:var(--muted)}
.who{font-weight:600;margin-left:4px}
p.summary{margin:0 0 12px;font-size:14.5px}
.picture figure{margin:0 0 12px}
figcaption{font-size:13px;font-weight:600;color:var(--fg);margin:0 0 6px}
.replay-note{font-size:13px;margin:0 0 10px}
.outcome.pass{color:var(--ok);font-weight:600}.outcome.fail{color:var(--bad);font-weight:600}
.outcome.inconclusive{color:var(--warn);font-weight:600}
details>summary{cursor:pointer;color:var(--muted);font-size:13px;margin:4px 0}
pre{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:10px 12px;margin:6px 0 0;font-size:12px;
line-height:1.45;white-space:pre-wrap;word-break:break-word;overflow-x:auto}
p.hint{font-size:12.5px;color:var(--muted);margin:6px 0 0}
p.none{color:var(--ok);font-weight:600;margin:0}
footer{color:var(--muted);font-size:12px;padding:8px 0 28px}
.script-errors{max-width:1180px;margin:0 auto 24px;background:#ffebe9;border:1px solid #ff8182;border-radius:6px;padding:8px 12px;
font-family:ui-monospace,monospace;font-size:12px}
svg.defs{position:absolute}
svg.chart{max-width:100%;height:auto;display:block;overflow:visible}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;font-size:12px;fill:var(--fg)}
svg .mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace}
svg .grid{stroke:var(--soft);stroke-width:1}
svg .axis{stroke:#8c959f;stroke-width:1}
svg .tick{fill:var(--muted);font-size:11px}
svg .axis-label{fill:var(--muted);font-size:11.5px}
svg .vertical{writing-mode:vertical-rl;transform-box:fill-box;transform-origin:center;transform:rotate(180deg)}
svg .legend{font-size:12.5px;fill:var(--fg)}svg .legend.mono{font-size:12.5px}svg .legend.strong{font-weight:600;fill:var(--bad)}
svg .ln-other{fill:none;stroke:#8c959f;stroke-width:1.2;stroke-opacity:.75}
svg .ln-median{fill:none;stroke:#57606a;stroke-width:1.5;stroke-dasharray:4 3}
svg .band{fill:#d0d7de;fill-opacity:.55;stroke:none}
svg .ln-suspect{fill:none;stroke:var(--bad);stroke-width:2.4;stroke-linejoin:round}
svg .pt-late{fill:var(--bad);stroke:#fff;stroke-width:1}
svg .thr{stroke:var(--warn);stroke-width:1.5;stroke-dasharray:6 4}
svg .thr-label{fill:var(--warn);font-size:11.5px;font-weight:600}
svg .bar-slow{fill:var(--bad)}svg .bar-normal{fill:#afb8c1}
svg .bar-label{font-size:12px}svg .bar-label.slow{font-weight:600}
svg .bar-value{font-size:11.5px;fill:var(--muted)}
svg .peer-tick{stroke:#1f2328;stroke-width:2}
svg .vote-maj{fill:#2da44e}svg .vote-0{fill:#cf222e}svg .vote-1{fill:#bc4c00}svg .vote-2{fill:#8250df}
svg .vote-3{fill:#bf3989}svg .vote-4{fill:#0969da}svg .vote-none{fill:#d0d7de}
svg .cell-label{fill:#fff;font-size:13px;font-weight:600}svg .cell-label.small{font-size:10px}
svg .edge{fill:none;stroke:#57606a;stroke-width:1.6;marker-end:url(#arrow)}
svg .arrow-head{fill:#57606a}
svg .edge-label{font-size:11px;fill:var(--muted);paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg .box{fill:#f6f8fa;stroke:#8c959f;stroke-width:1.2}
svg .box-root{fill:#ffebe9;stroke:var(--bad);stroke-width:2}
svg .node-title{font-size:13px;font-weight:600}
svg .node-state{font-size:11px;fill:var(--muted)}
svg .root .node-state{fill:var(--bad);font-weight:600}
svg .lane{fill:#fafbfc}svg .lane.alt{fill:#f3f5f7}
svg .lane-label{font-size:12px;fill:var(--muted);font-weight:600}
svg .tl-finding .tl-bar{fill:#6e7781}
svg .kind-hang .tl-bar{fill:var(--hang)}svg .kind-deadlock .tl-bar{fill:var(--deadlock)}
svg .kind-crash .tl-bar{fill:var(--crash)}svg .kind-stall .tl-bar{fill:var(--stall)}svg .kind-sdc .tl-bar{fill:var(--sdc)}
svg .kind-nan .tl-bar{fill:var(--nan)}svg .kind-desync .tl-bar{fill:var(--desync)}
svg .kind-straggler .tl-bar{fill:var(--straggler)}svg .kind-slowlink .tl-bar{fill:var(--slowlink)}
svg .tl-finding.closed .tl-bar{fill-opacity:.45}
svg .tl-finding.hl .tl-bar,svg .tl-finding:hover .tl-bar{stroke:#1f2328;stroke-width:2}
svg .tl-id{font-size:11px;font-weight:600;fill:var(--fg)}
svg .tl-ckpt .diamond{fill:#8c959f;stroke:#fff;stroke-width:1}
svg .tl-ckpt.verified .diamond{fill:var(--ok)}svg .tl-ckpt.rejected .diamond{fill:var(--bad)}
svg .tl-step{font-size:10px;fill:var(--muted)}
svg .tl-replay .tl-bar{fill:#8c959f}svg .tl-replay.pass .tl-bar{fill:#2da44e}
svg .tl-replay.fail .tl-bar{fill:var(--bad)}svg .tl-replay.inconclusive .tl-bar{fill:#d4a72c}
@media (max-width:900px){section.tiles{grid-template-columns:repeat(2,minmax(0,1fr))}}
@media print{body{background:#fff}section{box-shadow:none;break-inside:avoid}header.top{background:#fff;color:#000}}
)CSS";
}

const char* report_script() {
  return R"JS(
(function () {
  "use strict";
  var root = document.documentElement, log = document.getElementById("script-errors"), n = 0;
  function note(text) {
    n += 1;
    root.setAttribute("data-script-errors", String(n));
    if (!log) return;
    var line = document.createElement("div");
    line.textContent = text;
    log.appendChild(line);
    log.hidden = false;
  }
  window.addEventListener("error", function (e) {
    note("script error: " + (e.message || e.type) + (e.filename ? " (" + e.filename + ":" + e.lineno + ")" : ""));
  });
  document.addEventListener("securitypolicyviolation", function (e) {
    note("blocked by the page's policy: " + e.violatedDirective + " " + (e.blockedURI || ""));
  });
  // A finding's row, timeline bar and section light up together.
  var parts = document.querySelectorAll("[data-finding]");
  function mark(id, on) {
    for (var i = 0; i < parts.length; i += 1) {
      if (parts[i].getAttribute("data-finding") === id) parts[i].classList.toggle("hl", on);
    }
  }
  for (var i = 0; i < parts.length; i += 1) {
    (function (el) {
      var id = el.getAttribute("data-finding");
      el.addEventListener("mouseenter", function () { mark(id, true); });
      el.addEventListener("mouseleave", function () { mark(id, false); });
    })(parts[i]);
  }
  root.setAttribute("data-ready", "1");
})();
)JS";
}

}  // namespace scout::cli
