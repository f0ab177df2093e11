#pragma once
// Reading a TOML table key by key (scenario and protocol files): unknown keys and wrong types are
// one-line errors naming the file and the key.

#include "ftsim/arch/Error.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ftsim::verify {

// Reads one table's keys, refusing unknown ones and wrong types with the file name.
class TableReader {
public:
  TableReader(const toml::table &table, std::string origin, std::string prefix,
              std::vector<std::string> known)
      : table_(table), origin_(std::move(origin)), prefix_(std::move(prefix)),
        known_(std::move(known)) {
    for (const auto &[key, node] : table_) {
      const std::string k(key.str());
      if (std::find(known_.begin(), known_.end(), k) == known_.end()) {
        std::string list;
        for (const auto &n : known_)
          list += (list.empty() ? "" : ", ") + n;
        fatal("{}: unknown key '{}{}' (known: {})", origin_, prefix_, k, list);
      }
    }
  }

  std::optional<std::string> string(const char *key) const {
    const toml::node *n = table_.get(key);
    if (!n)
      return std::nullopt;
    if (auto v = n->value<std::string>(); v && n->is_string())
      return *v;
    fatal("{}: '{}{}' must be a string", origin_, prefix_, key);
  }

  std::optional<std::int64_t> integer(const char *key) const {
    const toml::node *n = table_.get(key);
    if (!n)
      return std::nullopt;
    if (n->is_integer())
      return *n->value<std::int64_t>();
    fatal("{}: '{}{}' must be an integer", origin_, prefix_, key);
  }

  std::optional<unsigned> count(const char *key, std::int64_t lo, std::int64_t hi) const {
    auto v = integer(key);
    if (!v)
      return std::nullopt;
    if (*v < lo || *v > hi)
      fatal("{}: '{}{}' = {} is out of range ({}-{})", origin_, prefix_, key, *v, lo, hi);
    return static_cast<unsigned>(*v);
  }

  std::optional<bool> boolean(const char *key) const {
    const toml::node *n = table_.get(key);
    if (!n)
      return std::nullopt;
    if (n->is_boolean())
      return *n->value<bool>();
    fatal("{}: '{}{}' must be true or false", origin_, prefix_, key);
  }

  const toml::table *table(const char *key) const {
    const toml::node *n = table_.get(key);
    if (!n)
      return nullptr;
    if (!n->is_table())
      fatal("{}: '{}' must be a table ([{}])", origin_, key, key);
    return n->as_table();
  }

  const std::string &origin() const { return origin_; }

private:
  const toml::table &table_;
  std::string origin_;
  std::string prefix_;
  std::vector<std::string> known_;
};

} // namespace ftsim::verify
