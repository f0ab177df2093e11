// Byte-state safety of a patch protocol, proven with Z3 over the protocol's real trace.
//
// The trace (ProtocolTrace) is a sequence of points; between two points exactly one visible event
// happens (an atomic store, a completed sync, a publication). A CPU executes the site at some
// point T. What it fetched depends on the fetch model (sim/README.md):
//   atomic: every byte from the text state at T;
//   line:   the bytes of each 64-byte line from the state at that line's own read instant u_L,
//           with T the last of them and no sync completing in between (the fetching CPU is not
//           at an instruction boundary, so it cannot take the IPI);
//   stale:  each byte from any state between the CPU's last serialisation S and T, where S is at
//           or after every sync completed at or before T.
// Safe: the bytes are the old instruction, the new one, or start with the trap while the protocol's
// handler is armed for the site at T. The negation is asserted; unsat is the proof.

#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/verify/Proofs.h"
#include "ftsim/verify/ProtocolTrace.h"

#include <fmt/format.h>
#include <z3++.h>

#include <chrono>
#include <map>

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

std::string describeModelBytes(const arch::Arch &arch, const arch::Bytes &bytes,
                               std::uint64_t addr) {
  return fmt::format("{} = {}", arch::hexBytes(bytes), arch::describeBytes(arch, bytes, addr));
}

} // namespace

bool storeModelPossible(const arch::Arch &arch, sim::StoreModel store) {
  // Power ISA v3.1 Book II 1.4 "Single-Copy Atomicity": an aligned word store is atomic, so
  // splitting a powerpc instruction store into bytes describes no real machine.
  return !(arch.insnAlignment() == 4 && store == sim::StoreModel::Byte);
}

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

ProofResult proveByteStates(const arch::Arch &arch, const ByteStateQuery &q) {
  const auto started = std::chrono::steady_clock::now();
  ProofResult result;
  result.name = fmt::format("byte-state {} {} {} store={} fetch={} offset={} sites={}", arch.name(),
                            q.protocol, transitionName(q.transition), sim::storeModelName(q.store),
                            sim::fetchModelName(q.fetch), q.siteOffset, q.sites);
  const ProtocolTrace trace = traceProtocol(arch, q.protocol, q.store, requestsFor(arch, q));
  const std::size_t points = trace.points.size();
  const arch::Bytes trap = arch.trap();

  // Two queries whose formulas are identical up to the sites' absolute addresses have the same
  // answer. The formula depends on the address only through the relative layout of the stores and
  // the cache-line boundaries, so that layout is the key of a cache of proven queries.
  std::string signature = fmt::format("{}|{}|", arch.name(), static_cast<int>(q.fetch));
  for (const auto &req : trace.requests) {
    signature += fmt::format("r{}:{}>{}:", (req.addr - trace.requests[0].addr),
                             arch::hexBytes(req.oldBytes), arch::hexBytes(req.newBytes));
    for (std::size_t i = 0; i < req.oldBytes.size(); ++i)
      signature += fmt::format("{},", (req.addr + i) / sim::kLineSize -
                                          trace.requests[0].addr / sim::kLineSize);
  }
  for (const auto &step : trace.steps)
    signature +=
        step.kind == TraceStep::Kind::Sync
            ? std::string("S")
            : fmt::format("W{}:{}", step.addr - trace.requests[0].addr, arch::hexBytes(step.bytes));
  for (const auto &point : trace.points) {
    signature += fmt::format("P{}{}", point.stores, point.afterSync ? "s" : "");
    for (bool a : point.armed)
      signature += a ? '1' : '0';
  }
  static std::map<std::string, std::size_t> proven; // signature -> solver queries it took
  if (auto it = proven.find(signature); it != proven.end()) {
    result.holds = true;
    result.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    return result;
  }

  // One context for all queries: creating a context costs far more than a query.
  static z3::context ctx;
  result.holds = true;
  for (std::size_t s = 0; s < trace.requests.size() && result.holds; ++s) {
    const auto &req = trace.requests[s];
    const std::size_t n = req.oldBytes.size();
    // bytesAt[p][i]: byte i of the site at point p.
    std::vector<arch::Bytes> bytesAt;
    for (const auto &point : trace.points)
      bytesAt.push_back(trace.siteAt(point.stores, s));

    // Instants are 16-bit vectors so the whole query is QF_BV (bit-blasted: far faster than
    // mixing integer and bit-vector theories).
    static z3::solver solver(ctx, "QF_BV");
    solver.reset();
    auto instantVar = [&](const std::string &name) { return ctx.bv_const(name.c_str(), 16); };
    auto at = [&](std::size_t p) { return ctx.bv_val(static_cast<unsigned>(p), 16); };
    const z3::expr T = instantVar("T");
    solver.add(z3::ult(T, at(points)));
    std::vector<z3::expr> instant; // per byte: the point its value is read at
    switch (q.fetch) {
    case sim::FetchModel::Atomic:
      for (std::size_t i = 0; i < n; ++i)
        instant.push_back(T);
      break;
    case sim::FetchModel::Line: {
      std::map<std::uint64_t, z3::expr> lineRead;
      z3::expr_vector isLast(ctx);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t line = (req.addr + i) / sim::kLineSize;
        auto it = lineRead.find(line);
        if (it == lineRead.end()) {
          const z3::expr u = instantVar(fmt::format("u{}", line));
          solver.add(z3::ule(u, T));
          // A fetch in progress is not at an instruction boundary, so no IPI can be taken and no
          // sync can complete between its first line read and its execution.
          for (std::size_t p = 0; p < points; ++p)
            if (trace.points[p].afterSync)
              solver.add(!(z3::ult(u, at(p)) && z3::ule(at(p), T)));
          isLast.push_back(u == T);
          it = lineRead.emplace(line, u).first;
        }
        instant.push_back(it->second);
      }
      solver.add(z3::mk_or(isLast));
      break;
    }
    case sim::FetchModel::Stale: {
      const z3::expr S = instantVar("S");
      solver.add(z3::ule(S, T));
      for (std::size_t p = 0; p < points; ++p)
        if (trace.points[p].afterSync)
          solver.add(z3::implies(z3::ule(at(p), T), z3::uge(S, at(p))));
      // The unit of staleness is the ISA's fetch granule: a byte on x86, an aligned word on
      // powerpc (instruction fetches of aligned words are single-copy atomic, Power ISA v3.1
      // Book II 1.4).
      const unsigned granule = arch.insnAlignment();
      for (std::size_t i = 0; i < n; ++i) {
        if ((req.addr + i) % granule != 0 && i > 0) {
          instant.push_back(instant.back());
          continue;
        }
        const z3::expr t = instantVar(fmt::format("t{}", i));
        solver.add(z3::uge(t, S) && z3::ule(t, T));
        instant.push_back(t);
      }
      break;
    }
    }
    // The fetched bytes, as functions of the instants.
    std::vector<z3::expr> fetched;
    for (std::size_t i = 0; i < n; ++i) {
      z3::expr v = ctx.bv_val(bytesAt[points - 1][i], 8);
      for (std::size_t p = points - 1; p-- > 0;)
        v = z3::ite(instant[i] == at(p), ctx.bv_val(bytesAt[p][i], 8), v);
      fetched.push_back(v);
    }
    z3::expr armed = ctx.bool_val(trace.points[points - 1].armed[s]);
    for (std::size_t p = points - 1; p-- > 0;)
      armed = z3::ite(T == at(p), ctx.bool_val(trace.points[p].armed[s]), armed);
    auto equals = [&](const arch::Bytes &want, std::size_t len) {
      z3::expr_vector eq(ctx);
      for (std::size_t i = 0; i < len; ++i)
        eq.push_back(fetched[i] == ctx.bv_val(want[i], 8));
      return z3::mk_and(eq);
    };
    const z3::expr safe = equals(req.oldBytes, n) || equals(req.newBytes, n) ||
                          (equals(trap, std::min(trap.size(), n)) && armed);
    solver.add(!safe);
    result.checks++;
    if (solver.check() == z3::sat) {
      result.holds = false;
      const z3::model m = solver.get_model();
      arch::Bytes bytes;
      for (std::size_t i = 0; i < n; ++i)
        bytes.push_back(static_cast<std::uint8_t>(m.eval(fetched[i], true).get_numeral_uint()));
      const unsigned t = m.eval(T, true).get_numeral_uint();
      result.counterexample = fmt::format(
          "a CPU executing the site at {:#x} after {} of {} atomic stores{} fetches {}{}", req.addr,
          trace.points[t].stores, trace.stores(),
          trace.points[t].afterSync ? " (just after a sync)" : "",
          describeModelBytes(arch, bytes, req.addr),
          bytes[0] == trap[0] && !trace.points[t].armed[s]
              ? " while no handler knows the site (unexpected trap)"
              : "");
    }
  }
  if (result.holds)
    proven.emplace(signature, result.checks);
  result.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return result;
}

ProofResult proveByteStatesEverywhere(const arch::Arch &arch, const std::string &protocol) {
  const auto started = std::chrono::steady_clock::now();
  ProofResult all;
  all.holds = true;
  std::size_t queries = 0;
  for (unsigned sites : {1u, 3u})
    for (auto transition :
         {SiteTransition::NopToCall, SiteTransition::CallToNop, SiteTransition::CallToCall})
      for (auto store : {sim::StoreModel::Byte, sim::StoreModel::Word, sim::StoreModel::Line})
        for (auto fetch : {sim::FetchModel::Atomic, sim::FetchModel::Line, sim::FetchModel::Stale})
          for (unsigned offset = 0; offset < sim::kLineSize; offset += arch.insnAlignment()) {
            if (!storeModelPossible(arch, store))
              continue;
            ByteStateQuery q{protocol, store, fetch, transition, offset, sites};
            ProofResult r = proveByteStates(arch, q);
            all.checks += r.checks;
            ++queries;
            if (!r.holds) {
              // One counterexample refutes the protocol; the rest would only repeat it.
              all.holds = false;
              all.counterexample = r.name + ": " + r.counterexample;
              all.name = fmt::format("byte-state safety of {} {}", arch.name(), protocol);
              all.milliseconds = std::chrono::duration<double, std::milli>(
                                     std::chrono::steady_clock::now() - started)
                                     .count();
              return all;
            }
          }
  all.name =
      fmt::format("byte-state safety of {} {}: {} configurations (offsets 0-63{}, store {}, fetch "
                  "atomic/line/stale, nop->call, call->nop, call->call, batches of 1 and 3 sites)",
                  arch.name(), protocol, queries, arch.insnAlignment() > 1 ? " in steps of 4" : "",
                  storeModelPossible(arch, sim::StoreModel::Byte)
                      ? "byte/word/line"
                      : "word/line (byte splits are impossible for aligned powerpc words)");
  all.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return all;
}

} // namespace ftsim::verify
