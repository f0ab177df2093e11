#pragma once
// Progress of a long command on stderr, one reporter for every command (check, prove, mutants,
// trace, demo, repro, fuzz): "ftsim mutants: 3/12 mutants, 4 s, ETA 12 s". On a terminal it is
// one line rewritten in place (carriage return); forced into a file or pipe (--progress) one
// line per report. Reports are rate-limited (the first one, then at most one per interval, and
// the final state at finish()); stdout is never touched, so deterministic output stays so.
// It lives in ftsim::arch, the one library every command links (trace is built without verify).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ftsim {

// What a long computation reports: `done` of `total` units (total 0: unknown).
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;

enum class ProgressMode {
  Off,      // nothing (stderr is not a terminal and --progress was not given, or --quiet)
  Terminal, // one line, rewritten with '\r', ended at finish()
  Lines,    // one line per report (--progress into a file or pipe)
};

// Off with `quiet`; Lines or Terminal with `forced` (--progress); else Terminal only when
// `stderrIsTerminal`.
ProgressMode progressMode(bool forced, bool quiet, bool stderrIsTerminal);

// "3/12 mutants, 4 s, ETA 12 s": the ETA from the rate so far when the total is known, `eta`
// when the caller knows better, "ETA unknown" otherwise.
std::string progressText(std::string_view unit, std::uint64_t done, std::uint64_t total,
                         double seconds, std::optional<double> eta = std::nullopt);

class Progress {
public:
  Progress(std::string command, std::string unit, ProgressMode mode,
           std::chrono::milliseconds every = std::chrono::milliseconds(1000),
           std::FILE *out = stderr);
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  bool enabled() const { return mode_ != ProgressMode::Off; }
  // The state now; printed when due (the first report, then once per interval).
  void update(std::uint64_t done, std::uint64_t total = 0, std::optional<double> eta = std::nullopt,
              std::string_view detail = {});
  // A ProgressFn that updates this reporter.
  ProgressFn fn();
  // Erases a terminal line before the command prints to stdout (the next report draws it again).
  void clear();
  // Prints the last state if it was not printed, and ends a terminal line. Idempotent.
  void finish();

private:
  void print();
  double elapsed() const;

  std::string command_, unit_;
  ProgressMode mode_;
  std::chrono::milliseconds every_;
  std::FILE *out_;
  std::chrono::steady_clock::time_point start_, last_;
  bool printedAny_ = false, pending_ = false, finished_ = false;
  std::uint64_t done_ = 0, total_ = 0;
  std::optional<double> eta_;
  std::string detail_;
};

} // namespace ftsim
