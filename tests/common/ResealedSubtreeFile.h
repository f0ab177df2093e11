#pragma once
// A subtree job, result or checkpoint file (SubtreeFiles.h) sealed again with a digest that
// matches its content — FNV-1a of the file without "digest", keys sorted, compact — so that tests
// and the fuzzer reach the checks behind the digest with content of their own.

#include "ftsim/verify/explore/Explore.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

namespace ftsim::test {

inline std::string resealedSubtreeFile(nlohmann::ordered_json file) {
  nlohmann::json plain = nlohmann::json::parse(file.dump());
  plain.erase("digest");
  file["digest"] = fmt::format("{:#018x}", verify::fnv1a(plain.dump()));
  return file.dump(1);
}

} // namespace ftsim::test
