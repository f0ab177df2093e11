// The verdict vocabulary (Verdict.h).

#include "ftsim/verify/check/Verdict.h"

#include <fmt/format.h>

namespace ftsim::verify {

std::string_view verdictWord(Verdict verdict) {
  switch (verdict) {
  case Verdict::Verified:
    return "VERIFIED";
  case Verdict::NoViolation:
    return "NO VIOLATION";
  case Verdict::Violation:
    return "VIOLATION";
  case Verdict::BadInput:
    return "BAD INPUT";
  case Verdict::Incomplete:
    return "INCOMPLETE";
  }
  return "?";
}

int exitStatus(Verdict verdict) {
  switch (verdict) {
  case Verdict::Verified:
  case Verdict::NoViolation:
    return 0;
  case Verdict::Violation:
    return 1;
  case Verdict::BadInput:
    return 2;
  case Verdict::Incomplete:
    return 3;
  }
  return 2;
}

Verdict verdictOf(const Coverage &c) {
  if (c.cut || c.executions == 0 || (c.exhaustive && !c.complete))
    return Verdict::Incomplete;
  return c.exhaustive ? Verdict::Verified : Verdict::NoViolation;
}

std::string incompleteReason(const Coverage &c, std::uint64_t budget, std::uint64_t maxEvents) {
  if (verdictOf(c) != Verdict::Incomplete)
    return {};
  std::string out;
  if (c.executions == 0)
    out = "no execution ran";
  else if (c.exhaustive && !c.complete)
    out = fmt::format("the execution budget ({}) ran out before the search completed", budget);
  if (c.cut)
    out += fmt::format("{}{} of {} executions were cut at max_events = {} before the scenario "
                       "finished",
                       out.empty() ? "" : "; ", c.cut, c.executions, maxEvents);
  return out;
}

} // namespace ftsim::verify
