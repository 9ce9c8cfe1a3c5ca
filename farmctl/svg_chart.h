// Line charts as self-contained SVG text, for pictures in docs and reports: one line
// per series over a shared x axis, axes with round ticks, a legend. No fonts or
// scripts are loaded, so the file renders anywhere.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace schedfarm {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x increasing
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
};

// `text` with &, <, > and " escaped, for SVG and HTML text and attributes.
std::string XmlEscaped(const std::string& text);

// The chart as an SVG document (width x height pixels). Series without points are
// listed in the legend only; an empty chart draws its axes over [0, 1].
std::string RenderSvgLineChart(const LineChart& chart, int width = 720, int height = 420);

}  // namespace schedfarm
