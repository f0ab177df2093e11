#pragma once
// kallsyms for the model: the engine asks a callback which function contains an address, so that
// it depends neither on ftsim::arch::Image nor on how symbols were loaded.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ftsim::model {

struct SymbolInfo {
  std::string name; // "schedule"
  std::uint64_t start = 0;
  std::uint64_t size = 0;
  std::string module; // empty for the core kernel, else the module name ("[mod]" in listings)
};

// Returns the function containing `addr`, or nullopt (kallsyms_lookup() failing).
using Symbolizer = std::function<std::optional<SymbolInfo>(std::uint64_t addr)>;

// %pS: "schedule+0x4/0x60" or "fn+0x0/0x10 [mod]"; the bare address "0x..." when unknown.
std::string formatSymbolOffset(const std::optional<SymbolInfo> &symbol, std::uint64_t addr);

} // namespace ftsim::model
