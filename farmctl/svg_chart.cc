#include "farmctl/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace schedfarm {
namespace {

// Distinguishable line colours (the Okabe-Ito palette), reused in turn.
constexpr const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                    "#CC79A7", "#56B4E9", "#F0E442", "#000000"};

std::string Number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

// Five to ten round ticks (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> Ticks(double lo, double hi) {
  const double raw = (hi - lo) / 8;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

}  // namespace

std::string XmlEscaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderSvgLineChart(const LineChart& chart, int width, int height) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const ChartSeries& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  if (!(x_lo < x_hi)) x_lo = std::isfinite(x_lo) ? x_lo - 1 : 0, x_hi = x_lo + 1;
  if (!(y_lo < y_hi)) y_lo = std::isfinite(y_lo) ? y_lo - 1 : 0, y_hi = y_lo + 1;
  const double y_pad = (y_hi - y_lo) * 0.05;
  y_lo -= y_pad, y_hi += y_pad;
  const int left = 70, right = 190, top = 40, bottom = 55;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  const auto px = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * plot_w; };
  const auto py = [&](double y) { return top + (y_hi - y) / (y_hi - y_lo) * plot_h; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << height << "\" viewBox=\"0 0 " << width << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
      << XmlEscaped(chart.title) << "</text>\n";
  for (double t : Ticks(x_lo, x_hi)) {
    svg << "<line x1=\"" << px(t) << "\" y1=\"" << top << "\" x2=\"" << px(t) << "\" y2=\""
        << top + plot_h << "\" stroke=\"#e5e5e5\"/>\n"
        << "<text x=\"" << px(t) << "\" y=\"" << top + plot_h + 16
        << "\" text-anchor=\"middle\">" << Number(t) << "</text>\n";
  }
  for (double t : Ticks(y_lo, y_hi)) {
    svg << "<line x1=\"" << left << "\" y1=\"" << py(t) << "\" x2=\"" << left + plot_w
        << "\" y2=\"" << py(t) << "\" stroke=\"#e5e5e5\"/>\n"
        << "<text x=\"" << left - 6 << "\" y=\"" << py(t) + 4 << "\" text-anchor=\"end\">"
        << Number(t) << "</text>\n";
  }
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\""
      << plot_h << "\" fill=\"none\" stroke=\"#333\"/>\n"
      << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << height - 12
      << "\" text-anchor=\"middle\">" << XmlEscaped(chart.x_label) << "</text>\n"
      << "<text transform=\"translate(16," << top + plot_h / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << XmlEscaped(chart.y_label) << "</text>\n";
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    const char* colour = kColours[i % (sizeof(kColours) / sizeof(kColours[0]))];
    if (!s.points.empty()) {
      svg << "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\"" << colour
          << "\" points=\"";
      for (const auto& [x, y] : s.points) svg << px(x) << "," << py(y) << " ";
      svg << "\"/>\n";
    }
    const double ly = top + 10 + 20.0 * static_cast<double>(i);
    svg << "<line x1=\"" << left + plot_w + 12 << "\" y1=\"" << ly << "\" x2=\""
        << left + plot_w + 36 << "\" y2=\"" << ly << "\" stroke-width=\"2\" stroke=\"" << colour
        << "\"/>\n<text x=\"" << left + plot_w + 42 << "\" y=\"" << ly + 4 << "\">"
        << XmlEscaped(s.name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace schedfarm
