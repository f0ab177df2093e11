#pragma once
// struct ftrace_hash: a set of call-site addresses. An empty filter hash means "every function",
// an empty notrace hash means "no function" (hash_contains_ip() in kernel/trace/ftrace.c). An
// ordered set keeps every iteration deterministic, which the simulator's replay relies on.

#include <cstdint>
#include <set>

namespace ftsim::model {

class FtraceHash {
public:
  bool empty() const { return ips_.empty(); }
  std::size_t count() const { return ips_.size(); }
  bool contains(std::uint64_t ip) const { return ips_.count(ip) != 0; }
  void add(std::uint64_t ip) { ips_.insert(ip); }
  void remove(std::uint64_t ip) { ips_.erase(ip); }
  void clear() { ips_.clear(); }
  const std::set<std::uint64_t> &ips() const { return ips_; }
  bool operator==(const FtraceHash &) const = default;

private:
  std::set<std::uint64_t> ips_;
};

// struct ftrace_ops_hash
struct FtraceOpsHash {
  FtraceHash filter;
  FtraceHash notrace;
  // hash_contains_ip(): in the filter (or the filter is empty) and not in the notrace hash.
  bool containsIp(std::uint64_t ip) const {
    return (filter.empty() || filter.contains(ip)) && (notrace.empty() || !notrace.contains(ip));
  }
};

} // namespace ftsim::model
