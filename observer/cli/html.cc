#include "observer/cli/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace scout::cli::html {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) {
          out += "\xEF\xBF\xBD";  // U+FFFD
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string num(double v, int decimals) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::vector<double> ticks(double lo, double hi, int target) {
  std::vector<double> out;
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo || target < 1) {
    out.push_back(std::isfinite(lo) ? lo : 0);
    return out;
  }
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double v = first; v <= hi + step * 1e-9 && out.size() < 1000; v += step) {
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  if (out.size() < 2) out = {lo, hi};
  return out;
}

std::string title(const std::string& text) { return text.empty() ? "" : "<title>" + esc(text) + "</title>"; }

Svg::Svg(double width, double height, std::string css_class, std::string label)
    : w_(width), h_(height), cls_(std::move(css_class)), label_(std::move(label)) {}

void Svg::line(double x1, double y1, double x2, double y2, const std::string& cls) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
           "\" class=\"" + esc(cls) + "\"/>";
}

void Svg::rect(double x, double y, double w, double h, const std::string& cls, const std::string& tooltip, double rx) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(0.0, w)) + "\" height=\"" +
           num(std::max(0.0, h)) + "\"" + (rx > 0 ? " rx=\"" + num(rx) + "\"" : "") + " class=\"" + esc(cls) + "\"";
  body_ += tooltip.empty() ? "/>" : ">" + title(tooltip) + "</rect>";
}

void Svg::circle(double cx, double cy, double r, const std::string& cls, const std::string& tooltip) {
  body_ += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\" class=\"" + esc(cls) + "\"";
  body_ += tooltip.empty() ? "/>" : ">" + title(tooltip) + "</circle>";
}

void Svg::text(double x, double y, const std::string& s, const std::string& cls, const char* anchor) {
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" class=\"" + esc(cls) + "\"";
  if (std::string(anchor) != "start") body_ += std::string(" text-anchor=\"") + anchor + "\"";
  body_ += ">" + esc(s) + "</text>";
}

void Svg::polyline(const std::vector<double>& x, const std::vector<double>& y, const std::string& cls,
                   const std::string& tooltip) {
  std::string pts;
  auto flush = [&] {
    if (pts.empty()) return;
    body_ += "<polyline points=\"" + pts + "\" class=\"" + esc(cls) + "\"";
    body_ += tooltip.empty() ? "/>" : ">" + title(tooltip) + "</polyline>";
    pts.clear();
  };
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      flush();
      continue;
    }
    pts += (pts.empty() ? "" : " ") + num(x[i]) + "," + num(y[i]);
  }
  flush();
}

void Svg::begin_group(const std::string& cls, const std::string& href, const std::string& tooltip,
                      const std::string& data_finding) {
  const bool link = !href.empty();
  if (link) body_ += "<a href=\"" + esc(href) + "\">";
  body_ += "<g class=\"" + esc(cls) + "\"";
  if (!data_finding.empty()) body_ += " data-finding=\"" + esc(data_finding) + "\"";
  body_ += ">" + title(tooltip);
  open_links_.push_back(link);
}

void Svg::end_group() {
  if (open_links_.empty()) return;
  body_ += "</g>";
  if (open_links_.back()) body_ += "</a>";
  open_links_.pop_back();
}

std::string Svg::str() const {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(w_) + " " + num(h_) + "\" width=\"" +
                  num(w_) + "\" height=\"" + num(h_) + "\" class=\"" + esc(cls_) + "\" role=\"img\" aria-label=\"" +
                  esc(label_) + "\" preserveAspectRatio=\"xMinYMin meet\">" + body_;
  for (size_t i = open_links_.size(); i > 0; --i) s += open_links_[i - 1] ? "</g></a>" : "</g>";
  return s + "</svg>";
}

}  // namespace scout::cli::html
