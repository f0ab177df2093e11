// Byte-state safety of a patch protocol, proven with Z3 over the protocol's real trace.
//
// The trace (ProtocolTrace) is a sequence of points; between two points exactly one visible event
// happens (an atomic store, a completed sync, a publication). A CPU executes the site at some
// point T. What it fetched is what the fetch model admits per fetch granule
// (sim::FetchModel::admissible(), translated to constraints here):
//   Newest:            every byte from the text state at T;
//   NewestPerLine:     the bytes of each 64-byte line from the state at that line's own read
//                      instant u_L, the lines read in address order, with T the last of them and no
//                      sync completing in between (the fetching CPU is not at an instruction
//                      boundary, so it cannot take the IPI);
//   AnySinceSerialise: each granule from any state between the CPU's last serialisation S and T,
//                      where S is at or after every sync completed at or before T.
// Safe: the bytes are the old instruction, the new one, or start with the trap while the protocol's
// handler is armed for the site at T. The negation is asserted; unsat is the proof.

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/sim/Models.h"
#include "ftsim/verify/prove/Proofs.h"
#include "ftsim/verify/prove/ProtocolTrace.h"

#include <fmt/format.h>
#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

namespace ftsim::verify {
namespace {

// The slides' call: `e8 37 2e 00 00` is a call 0x2e37 bytes past the site's end (schedule() calling
// ftrace_caller). Every site calls the same relative target, so the bytes read like the slides'.
constexpr std::uint64_t kTrampolineDistance = 0x2e37 + 5;
constexpr std::uint64_t kOtherTrampolineDistance = 0x9000;

// The requests of a query, in queueing order. A batch of several sites is queued out of address
// order (second, first, third, ...), as text_poke_queue() callers may do: a correct protocol must
// then split or sort its vector, or the handler's bsearch misses.
std::vector<arch::PatchRequest> requestsFor(const arch::Arch &arch, const ByteStateQuery &q) {
  const std::uint64_t base = arch::kernelTextBase(arch) + 0x100000;
  std::vector<arch::PatchRequest> out;
  for (unsigned k = 0; k < q.sites; ++k) {
    const unsigned s = k == 0 && q.sites > 1 ? 1 : k == 1 ? 0 : k;
    // Sites in distinct cache lines, ascending, each at the requested offset within its line.
    const std::uint64_t site = base + 64 * (3 * s) + q.siteOffset;
    const arch::Bytes nop = arch.nop();
    const arch::Bytes call = arch.call(site, site + kTrampolineDistance).bytes;
    const arch::Bytes other = arch.call(site, site + kOtherTrampolineDistance).bytes;
    switch (q.transition) {
    case SiteTransition::NopToCall:
      out.push_back({site, nop, call});
      break;
    case SiteTransition::CallToNop:
      out.push_back({site, call, nop});
      break;
    case SiteTransition::CallToCall:
      out.push_back({site, call, other});
      break;
    }
  }
  return out;
}

double millisecondsSince(std::chrono::steady_clock::time_point started) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
      .count();
}

// Two queries whose formulas are identical up to the sites' absolute addresses have the same
// answer. The formula depends on the address only through the relative layout of the stores and
// the cache-line boundaries, so that layout is the key of a memo of proven queries.
std::string signatureOf(const arch::Arch &arch, const sim::FetchModel &fetch,
                        const ProtocolTrace &trace) {
  const std::uint64_t origin = trace.requests[0].addr;
  std::string signature = fmt::format("{}|{}|", arch.name(), fetch.name());
  for (const auto &req : trace.requests) {
    signature += fmt::format("r{}:{}>{}:", (req.addr - origin), arch::hexBytes(req.oldBytes),
                             arch::hexBytes(req.newBytes));
    for (std::size_t i = 0; i < req.oldBytes.size(); ++i)
      signature += fmt::format("{},", (req.addr + i) / sim::kLineSize - origin / sim::kLineSize);
  }
  for (const auto &step : trace.steps)
    signature += step.kind == TraceStep::Kind::Sync
                     ? std::string("S")
                     : fmt::format("W{}:{}", step.addr - origin, arch::hexBytes(step.bytes));
  for (const auto &point : trace.points) {
    signature += fmt::format("P{}{}", point.stores, point.afterSync ? "s" : "");
    for (bool a : point.armed)
      signature += a ? '1' : '0';
  }
  return signature;
}

std::string describeModelBytes(const arch::Arch &arch, const arch::Bytes &bytes,
                               std::uint64_t addr) {
  return fmt::format("{} = {}", arch::hexBytes(bytes), arch::describeBytes(arch, bytes, addr));
}

} // namespace

std::string_view transitionName(SiteTransition t) {
  switch (t) {
  case SiteTransition::NopToCall:
    return "nop->call";
  case SiteTransition::CallToNop:
    return "call->nop";
  case SiteTransition::CallToCall:
    return "call->call";
  }
  return "?";
}

// One Z3 context and solver and the memo of proven signatures, owned by one prover.
struct ByteStateProver::Impl {
  ProofResult prove(const arch::Arch &arch, const ByteStateQuery &q);
  // The negation of safety for request `s` of the trace; a counterexample when sat.
  std::optional<std::string> refute(const arch::Arch &arch, const sim::FetchModel &fetch,
                                    const ProtocolTrace &trace, std::size_t s);
  // Per byte of the site at `addr`: the point its value is read at, constrained as the fetch
  // model admits (T: the point the CPU executes the site).
  std::vector<z3::expr> readInstants(const arch::Arch &arch, const sim::FetchModel &fetch,
                                     const ProtocolTrace &trace, std::uint64_t addr, std::size_t n,
                                     const z3::expr &T);
  // Instants are 16-bit vectors so the whole query is QF_BV (bit-blasted: far faster than mixing
  // integer and bit-vector theories).
  z3::expr instantVar(const std::string &name) { return ctx_.bv_const(name.c_str(), 16); }
  z3::expr at(std::size_t p) { return ctx_.bv_val(static_cast<unsigned>(p), 16); }

  z3::context ctx_;
  z3::solver solver_{ctx_, "QF_BV"};
  std::map<std::string, std::size_t> proven_; // signature -> solver queries it took
};

std::vector<z3::expr> ByteStateProver::Impl::readInstants(const arch::Arch &arch,
                                                          const sim::FetchModel &fetch,
                                                          const ProtocolTrace &trace,
                                                          std::uint64_t addr, std::size_t n,
                                                          const z3::expr &T) {
  const std::size_t points = trace.points.size();
  std::vector<z3::expr> instant;
  switch (fetch.admissible()) {
  case sim::AdmissibleValues::Newest:
    for (std::size_t i = 0; i < n; ++i)
      instant.push_back(T);
    break;
  case sim::AdmissibleValues::NewestPerLine: {
    std::map<std::uint64_t, z3::expr> lineRead;
    z3::expr_vector isLast(ctx_);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t line = (addr + i) / sim::kLineSize;
      auto it = lineRead.find(line);
      if (it == lineRead.end()) {
        const z3::expr u = instantVar(fmt::format("u{}", line));
        solver_.add(z3::ule(u, T));
        // No sync completes between a line's read and the execution.
        for (std::size_t p = 0; p < points; ++p)
          if (trace.points[p].afterSync)
            solver_.add(!(z3::ult(u, at(p)) && z3::ule(at(p), T)));
        isLast.push_back(u == T);
        // In address order, as the machine fetches a straddling instruction (FetchLine reads the
        // first line, the step the second).
        if (!lineRead.empty())
          solver_.add(z3::ule(std::prev(lineRead.end())->second, u));
        it = lineRead.emplace(line, u).first;
      }
      instant.push_back(it->second);
    }
    solver_.add(z3::mk_or(isLast));
    break;
  }
  case sim::AdmissibleValues::AnySinceSerialise: {
    const z3::expr S = instantVar("S");
    solver_.add(z3::ule(S, T));
    for (std::size_t p = 0; p < points; ++p)
      if (trace.points[p].afterSync)
        solver_.add(z3::implies(z3::ule(at(p), T), z3::uge(S, at(p))));
    // One instant per fetch granule: a byte on x86, an aligned word on powerpc.
    const unsigned granule = arch.insnAlignment();
    for (std::size_t i = 0; i < n; ++i) {
      if ((addr + i) % granule != 0 && i > 0) {
        instant.push_back(instant.back());
        continue;
      }
      const z3::expr t = instantVar(fmt::format("t{}", i));
      solver_.add(z3::uge(t, S) && z3::ule(t, T));
      instant.push_back(t);
    }
    break;
  }
  }
  return instant;
}

std::optional<std::string> ByteStateProver::Impl::refute(const arch::Arch &arch,
                                                         const sim::FetchModel &fetch,
                                                         const ProtocolTrace &trace,
                                                         std::size_t s) {
  const auto &req = trace.requests[s];
  const std::size_t n = req.oldBytes.size();
  const std::size_t points = trace.points.size();
  const arch::Bytes trap = arch.trap();
  solver_.reset();
  const z3::expr T = instantVar("T");
  solver_.add(z3::ult(T, at(points)));
  const std::vector<z3::expr> instant = readInstants(arch, fetch, trace, req.addr, n, T);
  // The fetched bytes, as functions of the instants (bytesAt[p][i]: byte i of the site at p).
  std::vector<arch::Bytes> bytesAt;
  for (const auto &point : trace.points)
    bytesAt.push_back(trace.siteAt(point.stores, s));
  std::vector<z3::expr> fetched;
  for (std::size_t i = 0; i < n; ++i) {
    z3::expr v = ctx_.bv_val(bytesAt[points - 1][i], 8);
    for (std::size_t p = points - 1; p-- > 0;)
      v = z3::ite(instant[i] == at(p), ctx_.bv_val(bytesAt[p][i], 8), v);
    fetched.push_back(v);
  }
  z3::expr armed = ctx_.bool_val(trace.points[points - 1].armed[s]);
  for (std::size_t p = points - 1; p-- > 0;)
    armed = z3::ite(T == at(p), ctx_.bool_val(trace.points[p].armed[s]), armed);
  auto equals = [&](const arch::Bytes &want, std::size_t len) {
    z3::expr_vector eq(ctx_);
    for (std::size_t i = 0; i < len; ++i)
      eq.push_back(fetched[i] == ctx_.bv_val(want[i], 8));
    return z3::mk_and(eq);
  };
  solver_.add(!(equals(req.oldBytes, n) || equals(req.newBytes, n) ||
                (equals(trap, std::min(trap.size(), n)) && armed)));
  if (solver_.check() != z3::sat)
    return std::nullopt;
  const z3::model m = solver_.get_model();
  arch::Bytes bytes;
  for (std::size_t i = 0; i < n; ++i)
    bytes.push_back(static_cast<std::uint8_t>(m.eval(fetched[i], true).get_numeral_uint()));
  const unsigned t = m.eval(T, true).get_numeral_uint();
  return fmt::format(
      "a CPU executing the site at {:#x} after {} of {} atomic stores{} fetches {}{}", req.addr,
      trace.points[t].stores, trace.stores(),
      trace.points[t].afterSync ? " (just after a sync)" : "",
      describeModelBytes(arch, bytes, req.addr),
      bytes[0] == trap[0] && !trace.points[t].armed[s]
          ? " while no handler knows the site (unexpected trap)"
          : "");
}

ProofResult ByteStateProver::Impl::prove(const arch::Arch &arch, const ByteStateQuery &q) {
  const auto started = std::chrono::steady_clock::now();
  ProofResult result;
  result.name = fmt::format("byte-state {} {} {} store={} fetch={} offset={} sites={}", arch.name(),
                            q.protocol, transitionName(q.transition), sim::storeModelName(q.store),
                            q.fetch->name(), q.siteOffset, q.sites);
  const ProtocolTrace trace = traceProtocol(arch, q.protocol, q.store, requestsFor(arch, q));
  const std::string signature = signatureOf(arch, *q.fetch, trace);
  result.holds = true;
  // Completion first: stores that never leave a site holding its new instruction (a protocol of
  // syncs alone, or of the old bytes again) are safe at every instant and patch nothing.
  for (std::size_t s = 0; s < trace.requests.size() && result.holds; ++s) {
    const auto &req = trace.requests[s];
    const arch::Bytes end = trace.siteAt(trace.stores(), s);
    if (end != req.newBytes) {
      result.holds = false;
      result.counterexample =
          fmt::format("the protocol's {} stores end with the site at {:#x} holding {}, not its new "
                      "instruction {}",
                      trace.stores(), req.addr, describeModelBytes(arch, end, req.addr),
                      describeModelBytes(arch, req.newBytes, req.addr));
    }
  }
  if (result.holds && !proven_.contains(signature)) {
    for (std::size_t s = 0; s < trace.requests.size() && result.holds; ++s) {
      result.checks++;
      if (std::optional<std::string> cex = refute(arch, *q.fetch, trace, s)) {
        result.holds = false;
        result.counterexample = std::move(*cex);
      }
    }
    if (result.holds)
      proven_.emplace(signature, result.checks);
  }
  result.milliseconds = millisecondsSince(started);
  return result;
}

ByteStateProver::ByteStateProver() : impl_(std::make_unique<Impl>()) {}
ByteStateProver::~ByteStateProver() = default;

ProofResult ByteStateProver::prove(const arch::Arch &arch, const ByteStateQuery &query) {
  return impl_->prove(arch, query);
}

ProofResult proveByteStates(const arch::Arch &arch, const ByteStateQuery &q) {
  return ByteStateProver().prove(arch, q);
}

ProofResult proveByteStatesEverywhere(const arch::Arch &arch, const std::string &protocol) {
  const auto started = std::chrono::steady_clock::now();
  ProofResult all;
  all.holds = true;
  std::size_t queries = 0;
  ByteStateProver prover;
  for (unsigned sites : {1u, 3u})
    for (auto transition :
         {SiteTransition::NopToCall, SiteTransition::CallToNop, SiteTransition::CallToCall})
      for (auto store : {sim::StoreModel::Byte, sim::StoreModel::Word, sim::StoreModel::Line})
        for (const sim::FetchModel *fetch : sim::allFetchModels())
          for (unsigned offset = 0; offset < sim::kLineSize; offset += arch.insnAlignment()) {
            if (!sim::isRealStoreModel(arch, store))
              continue;
            ByteStateQuery q{protocol, store, fetch, transition, offset, sites};
            ProofResult r = prover.prove(arch, q);
            all.checks += r.checks;
            ++queries;
            if (!r.holds) {
              // One counterexample refutes the protocol; the rest would only repeat it.
              all.holds = false;
              all.counterexample = r.name + ": " + r.counterexample;
              all.name = fmt::format("byte-state safety of {} {}", arch.name(), protocol);
              all.milliseconds = millisecondsSince(started);
              return all;
            }
          }
  all.name =
      fmt::format("byte-state safety of {} {}: {} configurations (offsets 0-63{}, store {}, fetch "
                  "{}, nop->call, call->nop, call->call, batches of 1 and 3 sites)",
                  arch.name(), protocol, queries, arch.insnAlignment() > 1 ? " in steps of 4" : "",
                  sim::isRealStoreModel(arch, sim::StoreModel::Byte)
                      ? "byte/word/line"
                      : "word/line (byte splits are impossible for aligned powerpc words)",
                  sim::fetchModelNames("/"));
  all.milliseconds = millisecondsSince(started);
  return all;
}

} // namespace ftsim::verify
