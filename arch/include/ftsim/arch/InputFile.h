#pragma once
// Reading a file the user named (an ELF object or image, a scenario, a replay file, a protocol
// file): only a regular file is read, and only up to a stated size, so a device (/dev/zero), a
// FIFO, a directory or a huge file is a one-line FatalError naming the file and the limit, never an
// unbounded read.

#include <cstdint>
#include <string>
#include <string_view>

namespace ftsim {

// The size limits, one per kind of input (README.md states them).
inline constexpr std::uint64_t kMaxElfFileBytes = 256ull << 20;    // ELF objects and images
inline constexpr std::uint64_t kMaxScenarioFileBytes = 1ull << 20; // scenario TOML
inline constexpr std::uint64_t kMaxReplayFileBytes = 64ull << 20;  // replay JSON
inline constexpr std::uint64_t kMaxProtocolFileBytes = 1ull << 20; // protocol TOML

// The whole content of `path`, a regular file of at most `limit` bytes. `what` names the kind of
// input in the error ("ELF image", "scenario file", ...).
std::string readInputFile(const std::string &path, std::string_view what, std::uint64_t limit);

} // namespace ftsim
