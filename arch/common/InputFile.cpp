#include "ftsim/arch/InputFile.h"

#include "ftsim/arch/Error.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace ftsim {
namespace {

std::string_view kindOf(std::filesystem::file_type type) {
  switch (type) {
  case std::filesystem::file_type::directory:
    return "a directory";
  case std::filesystem::file_type::character:
  case std::filesystem::file_type::block:
    return "a device";
  case std::filesystem::file_type::fifo:
    return "a FIFO";
  case std::filesystem::file_type::socket:
    return "a socket";
  default:
    return "a special file";
  }
}

std::string sizeText(std::uint64_t bytes) {
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
    return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

} // namespace

std::string readInputFile(const std::string &path, std::string_view what, std::uint64_t limit) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found)
    fatal("{}: cannot open {}: {}", path, what,
          ec ? ec.message() : std::string("no such file or directory"));
  if (st.type() != std::filesystem::file_type::regular)
    fatal("{}: is {}, not a regular file ({} expected)", path, kindOf(st.type()), what);
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec)
    fatal("{}: cannot read {}: {}", path, what, ec.message());
  if (size > limit)
    fatal("{}: {} of {} bytes is over the limit of {}", path, what, size, sizeText(limit));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fatal("{}: cannot open {}: {}", path, what, std::strerror(errno));
  // Read the size stat reported and no more: a file that grows while it is read is an error.
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad())
    fatal("{}: read error in {}: {}", path, what, std::strerror(errno));
  char extra = 0;
  if (in.read(&extra, 1); in.gcount() != 0)
    fatal("{}: {} grew while it was read", path, what);
  return bytes;
}

} // namespace ftsim
