// Branch-encoding proofs. Each proof has two halves: Z3 proves the bit-vector formula of the
// encoding for every site and target; then the real encoder (arch::Arch::call/jump) is checked to
// compute exactly that formula on boundary and pseudo-random points, so the proof is about the
// code that runs, not only about a formula.

#include "ftsim/arch/Arch.h"
#include "ftsim/arch/Error.h"
#include "ftsim/arch/Image.h"
#include "ftsim/verify/prove/Proofs.h"

#include <fmt/format.h>
#include <z3++.h>

#include <chrono>
#include <random>

namespace ftsim::verify {
namespace {

// The real encoder cross-checked against the proven formula disagrees at one site and target.
void encoderDisagrees(ProofResult &r, std::uint64_t site, std::uint64_t target,
                      const arch::EncodeResult &got) {
  r.holds = false;
  r.counterexample = fmt::format("encoder disagrees with the proven formula at site {:#x} target "
                                 "{:#x}: got {} ({})",
                                 site, target, arch::hexBytes(got.bytes), got.error);
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// `e` with x := xv and y := yv (bit-vectors of `bits` bits), simplified.
z3::expr evalAt(z3::expr e, const z3::expr &x, std::uint64_t xv, const z3::expr &y,
                std::uint64_t yv, unsigned bits) {
  z3::context &c = e.ctx();
  z3::expr_vector from(c), to(c);
  from.push_back(x);
  from.push_back(y);
  to.push_back(c.bv_val(xv, bits));
  to.push_back(c.bv_val(yv, bits));
  return e.substitute(from, to).simplify();
}

std::uint64_t evalBits(z3::expr e, const z3::expr &x, std::uint64_t xv, const z3::expr &y,
                       std::uint64_t yv, unsigned bits) {
  return evalAt(e, x, xv, y, yv, bits).get_numeral_uint64();
}

bool evalBool(z3::expr e, const z3::expr &x, std::uint64_t xv, const z3::expr &y, std::uint64_t yv,
              unsigned bits) {
  return evalAt(e, x, xv, y, yv, bits).is_true();
}

// When the negated property is satisfiable: record Z3's site and target as the counterexample.
bool refuted(z3::solver &s, const z3::expr &site, const z3::expr &target, ProofResult &r) {
  if (s.check() != z3::sat)
    return false;
  const z3::model m = s.get_model();
  r.counterexample =
      fmt::format("site {} target {}", m.eval(site).to_string(), m.eval(target).to_string());
  r.holds = false;
  return true;
}

// Sample points: offsets around every range boundary, plus seeded random ones.
std::vector<std::pair<std::uint64_t, std::uint64_t>>
samples(std::uint64_t base, std::vector<std::int64_t> edges, std::uint64_t mask) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  std::mt19937_64 rng(2014);
  for (std::int64_t e : edges)
    for (std::int64_t d = -8; d <= 8; ++d)
      out.emplace_back(base & mask, (base + static_cast<std::uint64_t>(e + d)) & mask);
  for (int i = 0; i < 2000; ++i)
    out.emplace_back(rng() & mask, rng() & mask);
  return out;
}

ProofResult proveX86Rel32(const arch::Arch &arch) {
  const auto started = std::chrono::steady_clock::now();
  ProofResult r;
  r.name = "x86-64 rel32 call/jmp: bytes decode back to the target exactly when the "
           "displacement fits in 32 bits; the encoder refuses otherwise";
  z3::context c;
  const z3::expr site = c.bv_const("site", 64), target = c.bv_const("target", 64);
  const z3::expr next = site + c.bv_val(5, 64);
  const z3::expr disp = target - next;
  const z3::expr rel32 = disp.extract(31, 0);
  const z3::expr fits = z3::sext(rel32, 32) == disp;
  const z3::expr decoded = next + z3::sext(rel32, 32);
  z3::solver s(c);
  s.add((fits && decoded != target) || (!fits && decoded == target));
  r.checks++;
  if (refuted(s, site, target, r)) {
    r.milliseconds = since(started);
    return r;
  }
  // The real encoder computes the formula.
  r.holds = true;
  for (auto [sv, tv] : samples(0xffffffff81000000ull, {INT32_MAX, INT32_MIN, 0}, ~0ull)) {
    const arch::EncodeResult call = arch.call(sv, tv);
    const bool shouldFit = evalBool(fits, site, sv, target, tv, 64);
    const std::uint32_t rel = static_cast<std::uint32_t>(evalBits(rel32, site, sv, target, tv, 64));
    const arch::Bytes want{
        0xe8, static_cast<std::uint8_t>(rel), static_cast<std::uint8_t>(rel >> 8),
        static_cast<std::uint8_t>(rel >> 16), static_cast<std::uint8_t>(rel >> 24)};
    r.checks++;
    if (call.ok != shouldFit || (call.ok && call.bytes != want)) {
      encoderDisagrees(r, sv, tv, call);
      break;
    }
  }
  r.milliseconds = since(started);
  return r;
}

ProofResult provePowerPcBranch(const arch::Arch &arch) {
  const auto started = std::chrono::steady_clock::now();
  const unsigned bits = arch.wordSize() * 8;
  ProofResult r;
  r.name = fmt::format("powerpc{} bl: the 24-bit LI field reaches the target exactly when the "
                       "offset is word aligned and within -0x2000000..0x1fffffc; a long-branch "
                       "stub is needed exactly otherwise",
                       bits);
  z3::context c;
  const z3::expr site = c.bv_const("site", bits), target = c.bv_const("target", bits);
  const z3::expr delta = target - site;
  const z3::expr aligned = delta.extract(1, 0) == c.bv_val(0, 2);
  const z3::expr inRange =
      delta >= c.bv_val(-0x2000000, bits) && delta <= c.bv_val(0x1fffffc, bits);
  const z3::expr li = delta.extract(25, 2);
  const z3::expr decoded = site + z3::sext(z3::concat(li, c.bv_val(0, 2)), bits - 26);
  z3::solver s(c);
  s.add((decoded == target) != (aligned && inRange));
  r.checks++;
  if (refuted(s, site, target, r)) {
    r.milliseconds = since(started);
    return r;
  }
  r.holds = true;
  const std::uint64_t mask = bits == 64 ? ~0ull : 0xffffffffull;
  const std::uint64_t base = arch::kernelTextBase(arch);
  for (auto [sv, tv] : samples(base, {0x1fffffc, -0x2000000, 0x2000000, 2, 0}, mask)) {
    const arch::EncodeResult bl = arch.call(sv, tv);
    const bool reachable = evalBool(aligned && inRange, site, sv, target, tv, bits);
    r.checks++;
    bool agree = bl.ok == reachable;
    if (agree && bl.ok) {
      const std::uint32_t word = static_cast<std::uint32_t>(bl.bytes[0]) << 24 |
                                 static_cast<std::uint32_t>(bl.bytes[1]) << 16 |
                                 static_cast<std::uint32_t>(bl.bytes[2]) << 8 | bl.bytes[3];
      const std::uint32_t liWant =
          static_cast<std::uint32_t>(evalBits(li, site, sv, target, tv, bits));
      agree = word == (0x48000001u | (liWant << 2)) && arch.callTarget(sv, bl.bytes) == tv;
    }
    if (!agree) {
      encoderDisagrees(r, sv, tv, bl);
      break;
    }
  }
  r.milliseconds = since(started);
  return r;
}

} // namespace

ProofResult proveCallEncoding(const arch::Arch &arch) {
  switch (arch.branchForm()) {
  case arch::BranchForm::Rel32:
    return proveX86Rel32(arch);
  case arch::BranchForm::PowerPcI:
    return provePowerPcBranch(arch);
  }
  FTSIM_PANIC("unknown branch form");
}

bool truncatesLikePowerPc32(const arch::Arch &arch) {
  return arch.branchForm() == arch::BranchForm::PowerPcI && arch.wordSize() == 4;
}

ProofResult provePowerPcTruncationMisbranches(const arch::Arch &isa) {
  const auto started = std::chrono::steady_clock::now();
  if (!truncatesLikePowerPc32(isa))
    FTSIM_PANIC("the truncation proof is about 32-bit powerpc bl, not {}", isa.name());
  ProofResult r;
  r.name = "ppc-branch-range: a bl encoder that masks the offset into LI without a range check "
           "branches elsewhere for some aligned site and target";
  z3::context c;
  const z3::expr site = c.bv_const("site", 32), target = c.bv_const("target", 32);
  const z3::expr delta = target - site;
  const z3::expr word = c.bv_val(0x48000001u, 32) | (delta & c.bv_val(0x03fffffcu, 32));
  const z3::expr li = word.extract(25, 2);
  const z3::expr decoded = site + z3::sext(z3::concat(li, c.bv_val(0, 2)), 6);
  z3::solver s(c);
  // Aligned kernel-text site, aligned module target (the module area lies below PAGE_OFFSET).
  s.add(site.extract(1, 0) == c.bv_val(0, 2) && target.extract(1, 0) == c.bv_val(0, 2));
  s.add(z3::uge(site, c.bv_val(0xc0000000u, 32)) && z3::ult(site, c.bv_val(0xc1000000u, 32)));
  s.add(z3::uge(target, c.bv_val(0xb0000000u, 32)) && z3::ult(target, c.bv_val(0xc0000000u, 32)));
  s.add(decoded != target);
  r.checks++;
  if (s.check() == z3::sat) {
    const z3::model m = s.get_model();
    const auto sv = static_cast<std::uint32_t>(m.eval(site, true).get_numeral_uint64());
    const auto tv = static_cast<std::uint32_t>(m.eval(target, true).get_numeral_uint64());
    const auto wv = static_cast<std::uint32_t>(m.eval(word, true).get_numeral_uint64());
    const auto dv = static_cast<std::uint32_t>(m.eval(decoded, true).get_numeral_uint64());
    r.holds = true;
    r.counterexample = fmt::format("bl at {:#010x} meant for {:#010x} encodes as {:08x} and "
                                   "branches to {:#010x}; ftsim's encoder refuses it ({})",
                                   sv, tv, wv, dv, isa.call(sv, tv).error);
  }
  r.milliseconds = since(started);
  return r;
}

} // namespace ftsim::verify
