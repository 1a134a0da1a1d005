#include "report_html/page.h"

#include "report_html/escape.h"

namespace dpro::report_html {
namespace {

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:20px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;border-bottom:1px solid #ccc}h3{font-size:15px;margin:18px 0 4px}
h4{margin:10px 0 2px}.note{color:#666;font-size:12px;margin:2px 0 6px}
.sides{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:24px}
.side{min-width:0}.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:12px}th,td{border:1px solid #ddd;padding:2px 6px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;cursor:pointer}td.text{text-align:left;max-width:420px;overflow:hidden;text-overflow:ellipsis}
td.mark{color:#b00;font-size:11px}
.v-gpu{background:#dbe8f5}.v-cpu{background:#fde2c6}.v-comm{background:#fbe0e0}.v-peer{background:#eee3f0}
.v-wait{background:#eee0d4}.v-idle{background:#eeeeee}
svg.chart{width:100%;max-width:900px;height:auto;font-size:11px}svg .grid{stroke:#e5e5e5}
svg .reference{stroke:#222;stroke-width:1.5;stroke-dasharray:6 4}
circle.warmup{stroke:#000;stroke-width:1.5}circle.outlier{stroke:#d00;stroke-width:2}
.legend span{margin-right:12px;font-size:12px;white-space:nowrap}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
.up{color:#b00}.down{color:#070}
)";

// Click a header to sort its table by that column (numbers by their data-v value, text otherwise).
constexpr const char* kScript = R"(
document.querySelectorAll('table.sortable th').forEach(function(th){
  th.addEventListener('click',function(){
    var table=th.closest('table'),body=table.tBodies[0],col=th.cellIndex,asc=th.dataset.asc!=='1';
    var value=function(tr){var td=tr.cells[col];var v=td.dataset.v;return v!==undefined?parseFloat(v):td.textContent;};
    var rows=Array.prototype.slice.call(body.rows);
    rows.sort(function(a,b){var x=value(a),y=value(b);var c=typeof x==='number'&&typeof y==='number'?x-y:String(x).localeCompare(String(y));return asc?c:-c;});
    rows.forEach(function(r){body.appendChild(r);});
    th.dataset.asc=asc?'1':'0';
  });
});
)";

}  // namespace

std::string page_head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape_html(title) + "</title><style>" +
         kStyle + "</style></head><body>";
}

std::string page_tail() { return "<script>" + std::string(kScript) + "</script></body></html>\n"; }

}  // namespace dpro::report_html
