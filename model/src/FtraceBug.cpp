#include "ftsim/model/FtraceBug.h"

#include <fmt/format.h>

namespace ftsim::model {

std::string_view toString(PatchStatus status) {
  switch (status) {
  case PatchStatus::Ok:
    return "ok";
  case PatchStatus::ReadFault:
    return "read fault (-EFAULT)";
  case PatchStatus::Mismatch:
    return "unexpected bytes (-EINVAL)";
  case PatchStatus::WriteFault:
    return "write fault (-EPERM)";
  }
  return "?";
}

std::string colonHex(const arch::Bytes &bytes) {
  std::string text;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    text += fmt::format("{}{:02x}", i ? ":" : "", bytes[i]);
  return text;
}

// The lines of ftrace_bug(), print_ip_sym(), print_ip_ins() and print_bug_type() in
// kernel/trace/ftrace.c. pr_info() without a newline followed by printk(KERN_INFO ...) starts a new
// line, and pr_cont() after a newline-terminated line starts one too, hence the layout.
std::string FtraceBugReport::text() const {
  std::string out = "------------[ ftrace bug ]------------\n";
  // print_ip_sym: "[<%px>] %pS"; %px is zero-padded to the pointer width.
  const std::string ipSym =
      fmt::format("[<{:0{}x}>] {}\n", ip, wordSize * 2, formatSymbolOffset(symbol, ip));
  switch (failure) {
  case PatchStatus::ReadFault:
    out += "ftrace faulted on modifying \n" + ipSym;
    break;
  case PatchStatus::Mismatch:
    out += "ftrace failed to modify \n" + ipSym;
    if (actual)
      out += " actual:   " + colonHex(*actual) + "\n";
    else
      out += fmt::format(" actual:   [FAULT] {:0{}x}\n", ip, wordSize * 2);
    if (!expected.empty())
      out += " expected: " + colonHex(expected) + "\n";
    break;
  case PatchStatus::WriteFault:
    out += "ftrace faulted on writing \n" + ipSym;
    break;
  case PatchStatus::Ok:
    out += "ftrace faulted on unknown error \n" + ipSym;
    break;
  }
  switch (bugType) {
  case BugType::Unknown:
    break;
  case BugType::Init:
    out += "Initializing ftrace call sites\n";
    break;
  case BugType::Nop:
    out += "Setting ftrace call site to NOP\n";
    break;
  case BugType::Call:
    out += "Setting ftrace call site to call ftrace function\n";
    break;
  case BugType::Update:
    out += "Updating ftrace call site to call a different ftrace function\n";
    break;
  }
  // The word as the release holds it; v6.5 added the call-ops column.
  out += fmt::format("ftrace record flags: {:x}\n", rules.encode(recordFlags));
  out += fmt::format(" ({}){}", recordCount(recordFlags),
                     (recordFlags & RecordFlag::Regs) ? " R" : "  ");
  if (rules.has(RecordFlag::CallOps))
    out += (recordFlags & RecordFlag::CallOps) ? " O" : "  ";
  out += trampolines;
  out += fmt::format("\n expected tramp: {:x}\n", expectedTramp);
  return out;
}

} // namespace ftsim::model
