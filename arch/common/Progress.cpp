// The progress reporter of every long command (Progress.h).

#include "ftsim/arch/Progress.h"

#include <fmt/format.h>

#include <algorithm>

namespace ftsim {

ProgressMode progressMode(bool forced, bool quiet, bool stderrIsTerminal) {
  if (quiet)
    return ProgressMode::Off;
  if (stderrIsTerminal)
    return ProgressMode::Terminal;
  return forced ? ProgressMode::Lines : ProgressMode::Off;
}

std::string progressText(std::string_view unit, std::uint64_t done, std::uint64_t total,
                         double seconds, std::optional<double> eta) {
  std::string out =
      total ? fmt::format("{}/{} {}", done, total, unit) : fmt::format("{} {}", done, unit);
  out += fmt::format(", {:.0f} s", seconds);
  if (!eta && total && done)
    eta = seconds / static_cast<double>(done) * static_cast<double>(total - std::min(done, total));
  if (eta)
    out += fmt::format(", ETA {:.0f} s", std::max(*eta, 0.0));
  else
    out += ", ETA unknown";
  return out;
}

Progress::Progress(std::string command, std::string unit, ProgressMode mode,
                   std::chrono::milliseconds every, std::FILE *out)
    : command_(std::move(command)), unit_(std::move(unit)), mode_(mode), every_(every), out_(out),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

Progress::~Progress() { finish(); }

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(std::uint64_t done, std::uint64_t total, std::optional<double> eta,
                      std::string_view detail) {
  if (mode_ == ProgressMode::Off || finished_)
    return;
  done_ = done;
  total_ = total;
  eta_ = eta;
  detail_ = std::string(detail);
  pending_ = true;
  const auto now = std::chrono::steady_clock::now();
  if (printedAny_ && now - last_ < every_)
    return;
  last_ = now;
  print();
}

ProgressFn Progress::fn() {
  return [this](std::uint64_t done, std::uint64_t total) { update(done, total); };
}

void Progress::print() {
  std::string line =
      fmt::format("ftsim {}: {}", command_, progressText(unit_, done_, total_, elapsed(), eta_));
  if (!detail_.empty())
    line += " (" + detail_ + ")";
  if (mode_ == ProgressMode::Terminal)
    std::fprintf(out_, "\r%-79s", line.c_str());
  else
    std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
  printedAny_ = true;
  pending_ = false;
}

void Progress::clear() {
  if (mode_ != ProgressMode::Terminal || !printedAny_ || finished_)
    return;
  std::fprintf(out_, "\r%-79s\r", "");
  std::fflush(out_);
  printedAny_ = false; // the next report is due at once
}

void Progress::finish() {
  if (mode_ == ProgressMode::Off || finished_)
    return;
  if (pending_) {
    if (done_ >= total_ && total_)
      eta_ = 0.0;
    print();
  }
  if (mode_ == ProgressMode::Terminal && printedAny_) {
    std::fprintf(out_, "\n");
    std::fflush(out_);
  }
  finished_ = true;
}

} // namespace ftsim
