// Small pieces for writing HTML and inline SVG by hand (`scout report --html`): escaping, numbers
// for coordinates, an SVG canvas that collects elements, and axis ticks.
//
// Every string that comes from a store (names of hosts, communicators, GPUs, paths, summaries:
// written by processes we do not control) goes through esc() before it reaches the page; the
// helpers below that take text escape it themselves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace scout::cli::html {

// Text for an HTML text node or a double-quoted attribute value: & < > " ' become entities, and
// control characters other than tab and newline become U+FFFD (the input is valid UTF-8, as every
// string the store reader returns).
std::string esc(std::string_view s);

// A coordinate or length for SVG: at most `decimals` decimals, no trailing zeros ("12", "3.5");
// non-finite values become 0.
std::string num(double v, int decimals = 1);

// "Nice" tick values covering [lo, hi] with about `target` steps (1, 2 or 5 times a power of
// ten); at least two values when hi > lo.
std::vector<double> ticks(double lo, double hi, int target);

// An inline <svg> of width x height user units, drawn at that size in CSS pixels and scaled down
// (never up) to fit a narrower page (the page's CSS: max-width 100%, height auto). Elements are appended as markup; text() and title() escape their text.
class Svg {
 public:
  Svg(double width, double height, std::string css_class, std::string label);
  double width() const { return w_; }
  double height() const { return h_; }
  // Raw markup (already escaped by the caller).
  void raw(const std::string& markup) { body_ += markup; }
  void line(double x1, double y1, double x2, double y2, const std::string& cls);
  void rect(double x, double y, double w, double h, const std::string& cls, const std::string& tooltip = "",
            double rx = 0);
  void circle(double cx, double cy, double r, const std::string& cls, const std::string& tooltip = "");
  // anchor: "start", "middle", "end".
  void text(double x, double y, const std::string& s, const std::string& cls, const char* anchor = "start");
  // A polyline through (x[i], y[i]); points with a NaN y split it into pieces.
  void polyline(const std::vector<double>& x, const std::vector<double>& y, const std::string& cls,
                const std::string& tooltip = "");
  // Opens <g> (optionally a link to `href`, e.g. "#finding-3", with a tooltip); close with end_group().
  void begin_group(const std::string& cls, const std::string& href = "", const std::string& tooltip = "",
                   const std::string& data_finding = "");
  void end_group();
  // The <svg> element; role="img" with `label` as its accessible name.
  std::string str() const;

 private:
  double w_, h_;
  std::string cls_, label_, body_;
  std::vector<bool> open_links_;
};

// "<title>text</title>" (a tooltip) or "" for empty text.
std::string title(const std::string& text);

}  // namespace scout::cli::html
