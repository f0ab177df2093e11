// The SVG picture of a counterexample (Svg.h): hand-written SVG text from what SvgCapture.cpp
// captured by replaying it.

#include "ftsim/verify/replay/Svg.h"

#include "SvgCapture.h"
#include "ftsim/sim/Models.h"
#include "ftsim/verify/harness/Harness.h"

#include <fmt/format.h>

#include <algorithm>

namespace ftsim::verify {
namespace {

constexpr int kMargin = 20;
constexpr int kGutter = 200;   // lane labels
constexpr int kCell = 22;      // one byte of a site
constexpr int kCellHigh = 20;  //
constexpr int kBand = 40;      // an event's box in a lane
constexpr int kSiteRow = 26;   // one site's cells in a lane
constexpr int kLaneGap = 14;   //
constexpr double kCharW = 6.6; // monospace 11px, for wrapping and cutting labels
constexpr const char *kMono = "font-family=\"DejaVu Sans Mono,monospace\"";
constexpr const char *kSans = "font-family=\"DejaVu Sans,sans-serif\"";

std::string esc(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

// `text` cut to `chars` characters, with "..." when cut.
std::string cut(const std::string &text, std::size_t chars) {
  return text.size() <= chars ? text : text.substr(0, chars > 3 ? chars - 3 : 0) + "...";
}

// `text` in lines of at most `chars` characters, broken at spaces where there are some.
std::vector<std::string> wrap(const std::string &text, std::size_t chars) {
  std::vector<std::string> lines;
  std::string rest = text;
  while (rest.size() > chars) {
    std::size_t at = rest.rfind(' ', chars);
    if (at == std::string::npos || at < chars / 2)
      at = chars;
    lines.push_back(rest.substr(0, at));
    rest = rest.substr(at == chars ? at : at + 1);
  }
  lines.push_back(rest);
  return lines;
}

struct Style {
  const char *fill;
  const char *stroke;
};

Style styleOf(const sim::EventRecord &e, bool violating) {
  if (violating)
    return {"#ffe3e3", "#c53030"};
  switch (e.kind) {
  case sim::EventKind::Store:
    return {"#dbe9ff", "#2b6cb0"};
  case sim::EventKind::Publish:
  case sim::EventKind::Alloc:
  case sim::EventKind::Free:
    return {"#efe3ff", "#6b46c1"};
  case sim::EventKind::Ipi:
    return {"#dcf7f3", "#2c7a7b"};
  case sim::EventKind::Preempt:
  case sim::EventKind::Irq:
    return {"#fff0d9", "#c05621"};
  default:
    return {"#e6f4ea", "#2f855a"};
  }
}

// An event's box in two short lines: what happened, and to what.
std::pair<std::string, std::string> label(const Harness &h, const sim::EventRecord &e) {
  const std::span<const std::uint8_t> bytes(e.bytes, e.byteCount);
  switch (e.kind) {
  case sim::EventKind::Store:
    return {"patcher store", fmt::format("{} = {}", h.symbol(e.storeAddr), arch::hexBytes(bytes))};
  case sim::EventKind::Publish:
    return {"patcher publish", std::string(h.machine().publishName(e.detail))};
  case sim::EventKind::Alloc:
  case sim::EventKind::Free:
    return {fmt::format("patcher {}", sim::eventKindName(e.kind)),
            fmt::format("{:#x}+{}", e.storeAddr, e.detail)};
  case sim::EventKind::Ipi:
    return {"IPI taken (sync)", fmt::format("at {}", h.symbol(e.pc))};
  case sim::EventKind::Preempt:
    return {e.detail == 1 ? "timer irq-return" : "timer preemption", h.symbol(e.pc)};
  case sim::EventKind::Irq:
    return {"timer interrupt (handler)", h.symbol(e.pc)};
  default:
    break;
  }
  std::string what = e.task >= 0 ? fmt::format("task{} ", e.task) : std::string();
  if (e.outcome != sim::StepOutcome::None && e.outcome != sim::StepOutcome::WatchedStop)
    what += std::string(sim::stepOutcomeName(e.outcome));
  else
    what += e.kind == sim::EventKind::FetchLine ? "fetch, 1st line"
            : e.fetchSize                       ? "fetch"
                                                : std::string(sim::eventKindName(e.kind));
  if (e.fetchSize)
    return {what, fmt::format("{} [{}]", h.symbol(e.fetchAddr), arch::hexBytes(bytes))};
  if (e.dataSize)
    return {what, fmt::format("data-{} {:#x}", e.dataWrite ? "write" : "read", e.dataAddr)};
  return {what, h.symbol(e.pc)};
}

class Drawing {
public:
  Drawing(const Harness &h, const SvgCapture &c) : h_(h), c_(c) {
    std::size_t widest = 1;
    for (const SvgSite &s : c.sites)
      widest = std::max<std::size_t>(widest, s.size);
    colW_ = std::max(150, static_cast<int>(widest) * kCell + 28);
    laneH_ = kBand + static_cast<int>(c.sites.size()) * kSiteRow + kLaneGap;
    width_ = std::max(960, 2 * kMargin + kGutter + static_cast<int>(c.columns.size()) * colW_);
    textChars_ = static_cast<std::size_t>((width_ - 2 * kMargin - 24) / kCharW);
  }

  std::string draw() {
    int y = title(kMargin);
    lanesTop_ = y + 30;
    body_.clear();
    header(y + 18);
    for (unsigned cpu = 0; cpu < c_.cpus; ++cpu)
      lane(cpu);
    for (std::size_t k = 0; k < c_.columns.size(); ++k)
      arrows(k);
    y = lanesTop_ + static_cast<int>(c_.cpus) * laneH_ + 10;
    y = caption(y);
    y = legend(y);
    y = violationBox(y + 8);
    y = eventList(y + 8);
    const int height = y + kMargin;
    return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                       "viewBox=\"0 0 {0} {1}\">\n"
                       "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
                       "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 "
                       "L0,10 z\" fill=\"#2c7a7b\"/></marker></defs>\n"
                       "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n{2}{3}</svg>\n",
                       width_, height, head_, body_);
  }

private:
  int colX(std::size_t k) const { return kMargin + kGutter + static_cast<int>(k) * colW_; }
  int laneY(unsigned cpu) const { return lanesTop_ + static_cast<int>(cpu) * laneH_; }
  bool violating(std::size_t k) const { return c_.columns[k].event.index == c_.violation.event; }

  void text(std::string &into, int x, int y, const std::string &s, const char *attrs) {
    into += fmt::format("<text x=\"{}\" y=\"{}\" {}>{}</text>\n", x, y, attrs, esc(s));
  }

  // The title: the scenario and the violation, then what `ftsim check` prints about them.
  int title(int y) {
    const Scenario &s = h_.scenario();
    const std::string bold = fmt::format("{} font-size=\"17\" font-weight=\"bold\"", kSans);
    const std::string line = fmt::format("{} font-size=\"12\" fill=\"#333\"", kMono);
    text(head_, kMargin, y + 16,
         fmt::format("{}: {} at event #{}", s.name, c_.violation.oracle, c_.violation.event),
         bold.c_str());
    y += 24;
    std::vector<std::string> lines{fmt::format("ftsim check: {}", s.describe())};
    if (!s.source.empty() || !s.fidelity.empty())
      lines.push_back(fmt::format("source: {}; fidelity: {}", s.source.empty() ? "-" : s.source,
                                  s.fidelity.empty() ? "not stated" : s.fidelity));
    lines.push_back(fmt::format("models: store {}, fetch {}, max_events {}",
                                sim::storeModelName(s.store), s.fetch->name(), s.bounds.maxEvents));
    lines.push_back(fmt::format("linux: {}", describeScenarioProfile(s)));
    for (const std::string &l : lines)
      for (const std::string &w : wrap(l, textChars_)) {
        text(head_, kMargin, y + 14, w, line.c_str());
        y += 16;
      }
    return y;
  }

  // The event numbers over the columns, and the violation's column as a red band.
  void header(int y) {
    const std::string small = fmt::format("{} font-size=\"11\" fill=\"#555\"", kSans);
    text(body_, kMargin, y, "event (trail only)", small.c_str());
    for (std::size_t k = 0; k < c_.columns.size(); ++k) {
      const bool red = violating(k);
      if (red)
        body_ +=
            fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#c53030\" "
                        "fill-opacity=\"0.07\" stroke=\"#c53030\" stroke-dasharray=\"4 3\"/>\n",
                        colX(k) + 2, y - 14, colW_ - 4, static_cast<int>(c_.cpus) * laneH_ + 22);
      const std::string attrs = fmt::format("{} font-size=\"12\" font-weight=\"bold\" fill=\"{}\"",
                                            kMono, red ? "#c53030" : "#333");
      text(body_, colX(k) + 6, y,
           fmt::format("#{}{}", c_.columns[k].event.index, red ? "  VIOLATION" : ""),
           attrs.c_str());
    }
  }

  void lane(unsigned cpu) {
    const int y = laneY(cpu);
    body_ +=
        fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", kMargin,
                    y, width_ - 2 * kMargin, laneH_ - 4, cpu % 2 ? "#f7f7f7" : "#eef1f5");
    const std::string name = fmt::format("{} font-size=\"14\" font-weight=\"bold\"", kSans);
    text(body_, kMargin + 6, y + 20,
         fmt::format("cpu{}{}", cpu, cpu == c_.patcherCpu ? " (patcher)" : ""), name.c_str());
    const std::string small = fmt::format("{} font-size=\"10\" fill=\"#444\"", kMono);
    for (std::size_t s = 0; s < c_.sites.size(); ++s)
      text(body_, kMargin + 6, y + kBand + static_cast<int>(s) * kSiteRow + 15,
           fmt::format("{} {:#x}", c_.sites[s].name, c_.sites[s].addr), small.c_str());
    for (std::size_t k = 0; k < c_.columns.size(); ++k) {
      if (c_.columns[k].event.cpu == cpu)
        eventBox(k, y);
      for (std::size_t s = 0; s < c_.sites.size(); ++s)
        cells(k, s, cpu, y + kBand + static_cast<int>(s) * kSiteRow);
    }
  }

  void eventBox(std::size_t k, int y) {
    const SvgColumn &col = c_.columns[k];
    const bool red = violating(k);
    const Style st = styleOf(col.event, red);
    const auto [top, bottom] = label(h_, col.event);
    const std::size_t chars = static_cast<std::size_t>((colW_ - 16) / 6.0);
    body_ += fmt::format("<g><title>{}</title>\n", esc(col.described));
    body_ += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" fill=\"{}\" "
        "stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
        colX(k) + 4, y + 4, colW_ - 8, kBand - 8, st.fill, st.stroke, red ? "2.5" : "1.2",
        col.event.kind == sim::EventKind::Preempt ? " stroke-dasharray=\"5 3\"" : "");
    const std::string a =
        fmt::format("{} font-size=\"10\" font-weight=\"bold\" fill=\"{}\"", kMono, st.stroke);
    const std::string b = fmt::format("{} font-size=\"10\" fill=\"#222\"", kMono);
    text(body_, colX(k) + 9, y + 17, cut(top, chars), a.c_str());
    text(body_, colX(k) + 9, y + 30, cut(bottom, chars), b.c_str());
    body_ += "</g>\n";
  }

  // One site's bytes in one CPU's view after column k's event.
  void cells(std::size_t k, std::size_t s, unsigned cpu, int y) {
    const SvgColumn &col = c_.columns[k];
    const SvgSite &site = c_.sites[s];
    const arch::Bytes &view = col.view[s][cpu];
    const arch::Bytes &memory = col.memory[s];
    const sim::EventRecord &e = col.event;
    const bool red = violating(k) && !c_.violation.cpus.empty() &&
                     c_.violation.cpus.front() == cpu && c_.violation.pc >= site.addr &&
                     c_.violation.pc < site.addr + site.size;
    const int x0 = colX(k) + 10;
    for (std::size_t i = 0; i < view.size(); ++i) {
      const std::uint64_t addr = site.addr + i;
      const bool stale = view[i] != memory[i];
      const bool written = e.kind == sim::EventKind::Store && cpu == e.cpu && addr >= e.storeAddr &&
                           addr < e.storeAddr + e.storeSize;
      const char *fill = stale ? "#ffd98a" : written ? "#bcd6ff" : "#ffffff";
      const char *stroke = stale ? "#b7791f" : "#9aa5b1";
      const int x = x0 + static_cast<int>(i) * kCell;
      body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                           "stroke=\"{}\"/>\n",
                           x, y, kCell - 2, kCellHigh, fill, stroke);
      const std::string attrs =
          fmt::format("{} font-size=\"11\" text-anchor=\"middle\" fill=\"{}\"{}", kMono,
                      red ? "#c53030" : "#111", stale || red ? " font-weight=\"bold\"" : "");
      text(body_, x + (kCell - 2) / 2, y + 14, fmt::format("{:02x}", view[i]), attrs.c_str());
    }
    for (std::size_t i = 1; i < view.size(); ++i)
      if ((site.addr + i) % sim::kLineSize == 0) // a cache-line boundary inside the site
        body_ += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                             "stroke=\"#222\" stroke-width=\"3\"/>\n",
                             x0 + static_cast<int>(i) * kCell - 2, y - 5, y + kCellHigh + 5);
    if (red)
      body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                           "stroke=\"#c53030\" stroke-width=\"2.5\"/>\n",
                           x0 - 3, y - 3, static_cast<int>(view.size()) * kCell + 4, kCellHigh + 6);
  }

  // An IPI: an arrow from the patcher's lane (its sync) to the CPU that takes it, down the
  // column's right margin (clear of the cells).
  void arrows(std::size_t k) {
    const sim::EventRecord &e = c_.columns[k].event;
    if (e.kind != sim::EventKind::Ipi || e.cpu == c_.patcherCpu)
      return;
    const int x = colX(k) + colW_ - 12;
    const bool down = e.cpu > c_.patcherCpu;
    const int from = laneY(c_.patcherCpu) + (down ? 6 : 0);
    const int to = laneY(e.cpu) + (down ? 4 : kBand - 4);
    body_ += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#2c7a7b\" "
                         "stroke-width=\"2\" marker-end=\"url(#arrow)\"><title>the patcher's sync "
                         "IPI, taken by cpu{3}</title></line>\n",
                         x, from, to, e.cpu);
  }

  int caption(int y) {
    const std::string attrs = fmt::format("{} font-size=\"12\" fill=\"#333\"", kSans);
    const std::uint64_t trail = c_.columns.size() + c_.trailNotDrawn;
    std::vector<std::string> lines{
        fmt::format(
            "Columns: the {} events of the violation's trail out of the {} events up to it "
            "(#0-#{}); "
            "{} elided (steps and runs that fetch no watched text, touch no watched data and carry "
            "no annotation). Under each CPU: each site's bytes in that CPU's instruction view "
            "after "
            "the column's event.",
            trail, c_.eventsUpToViolation, c_.violation.event, c_.eventsUpToViolation - trail),
        fmt::format("cpu{} (the patcher) sees its own stores at once: its row is memory. Another "
                    "CPU's view keeps what it holds until the fetch model ({}) lets a store reach "
                    "it.",
                    c_.patcherCpu, h_.scenario().fetch->name())};
    if (c_.trailNotDrawn)
      lines.push_back(fmt::format("The first {} events of the trail are not drawn (the last {} "
                                  "are; ftsim replay prints them all).",
                                  c_.trailNotDrawn, c_.columns.size()));
    if (c_.eventsInExecution > c_.eventsUpToViolation)
      lines.push_back(fmt::format("The execution went on for {} events after the violation (not "
                                  "drawn).",
                                  c_.eventsInExecution - c_.eventsUpToViolation));
    if (c_.sites.empty())
      lines.push_back("The trail touches no watched patch site: no bytes are drawn.");
    if (c_.sitesNotDrawn)
      lines.push_back(
          fmt::format("{} more sites touched by the trail are not drawn.", c_.sitesNotDrawn));
    for (const std::string &l : lines)
      for (const std::string &w : wrap(l, static_cast<std::size_t>(textChars_ * 1.1))) {
        text(body_, kMargin, y + 14, w, attrs.c_str());
        y += 16;
      }
    return y;
  }

  int legend(int y) {
    y += 8;
    const std::string attrs = fmt::format("{} font-size=\"11\" fill=\"#333\"", kSans);
    const std::pair<const char *, const char *> keys[] = {
        {"#ffd98a", "stale: the view differs from memory"},
        {"#bcd6ff", "written by this store"},
        {"#ffe3e3", "the violation"}};
    int x = kMargin;
    for (const auto &[fill, what] : keys) {
      body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"14\" fill=\"{}\" "
                           "stroke=\"#777\"/>\n",
                           x, y, fill);
      text(body_, x + 22, y + 11, what, attrs.c_str());
      x += 34 + static_cast<int>(std::string_view(what).size() * 6.2);
    }
    if (std::any_of(c_.sites.begin(), c_.sites.end(), [](const SvgSite &site) {
          return site.addr / sim::kLineSize != (site.addr + site.size - 1) / sim::kLineSize;
        })) {
      body_ += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#222\" "
                           "stroke-width=\"3\"/>\n",
                           x + 8, y - 2, y + 16);
      text(body_, x + 18, y + 11, fmt::format("{}-byte cache-line boundary", sim::kLineSize),
           attrs.c_str());
    }
    text(body_, kMargin, y + 31,
         "boxes: blue patcher store, purple publication, teal IPI, orange dashed preemption, "
         "green guest step; an arrow: a sync IPI from the patcher; the list below gives each event "
         "in full",
         attrs.c_str());
    return y + 40;
  }

  int violationBox(int y) {
    const Violation &v = c_.violation;
    std::vector<std::string> lines = wrap("VIOLATION " + summarizeViolation(v), textChars_);
    if (!v.bytes.empty())
      for (const std::string &w :
           wrap(fmt::format("bytes {} = {}", arch::hexBytes(v.bytes), v.decoded), textChars_))
        lines.push_back(w);
    const int h = static_cast<int>(lines.size()) * 17 + 14;
    body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"5\" "
                         "fill=\"#fff5f5\" stroke=\"#c53030\" stroke-width=\"2\"/>\n",
                         kMargin, y, width_ - 2 * kMargin, h);
    const std::string attrs =
        fmt::format("{} font-size=\"12\" font-weight=\"bold\" fill=\"#c53030\"", kMono);
    for (std::size_t i = 0; i < lines.size(); ++i)
      text(body_, kMargin + 10, y + 21 + static_cast<int>(i) * 17, lines[i], attrs.c_str());
    return y + h;
  }

  // Each drawn event as the timeline prints it.
  int eventList(int y) {
    const std::string head = fmt::format("{} font-size=\"12\" font-weight=\"bold\"", kSans);
    text(body_, kMargin, y + 14, "The drawn events (as ftsim replay prints them):", head.c_str());
    y += 20;
    for (std::size_t k = 0; k < c_.columns.size(); ++k) {
      const std::string attrs =
          fmt::format("{} font-size=\"11\" fill=\"{}\"", kMono, violating(k) ? "#c53030" : "#222");
      for (const std::string &w : wrap(c_.columns[k].described, textChars_)) {
        text(body_, kMargin + 8, y + 14, w, attrs.c_str());
        y += 15;
      }
    }
    return y;
  }

  const Harness &h_;
  const SvgCapture &c_;
  int colW_ = 0, laneH_ = 0, width_ = 0, lanesTop_ = 0;
  std::size_t textChars_ = 0;
  std::string head_, body_;
};

} // namespace

std::string counterexampleSvg(Harness &harness, const Counterexample &cex,
                              const std::string &origin) {
  const SvgCapture capture = captureForSvg(harness, cex, origin);
  return Drawing(harness, capture).draw();
}

} // namespace ftsim::verify
