// ftsim_fuzz_tracefs: the filter syntax of set_ftrace_filter / set_ftrace_notrace (model/src/
// TraceArray.cpp: patterns, "func:mod:module", function probes "func:traceoff:3", '!' removal)
// and every other writable tracefs file (model/src/TraceFs.cpp), as `ftsim trace --filter G` and
// the ftracetest ports write them, on a small booted core (tests/model/FakeKernel.h).
//
// The input is a sequence of writes "S value\0": S picks the file and '>' or '>>'; at most 16
// writes, then every file is read back.

#include "FuzzSupport.h"

#include "FakeKernel.h"

#include "ftsim/model/TraceFs.h"

#include <array>
#include <string_view>

namespace {

using namespace ftsim::model;

constexpr std::array<std::string_view, 14> kFiles = {"set_ftrace_filter",
                                                     "set_ftrace_notrace",
                                                     "stack_trace_filter",
                                                     "set_graph_function",
                                                     "set_graph_notrace",
                                                     "current_tracer",
                                                     "tracing_on",
                                                     "buffer_size_kb",
                                                     "trace",
                                                     "stack_tracer_enabled",
                                                     "function_profile_enabled",
                                                     "stack_max_size",
                                                     "enabled_functions",
                                                     "no_such_file"};

constexpr std::array<std::string_view, 17> kReadable = {"current_tracer",
                                                        "available_tracers",
                                                        "set_ftrace_filter",
                                                        "set_ftrace_notrace",
                                                        "stack_trace_filter",
                                                        "set_graph_function",
                                                        "set_graph_notrace",
                                                        "enabled_functions",
                                                        "tracing_on",
                                                        "buffer_size_kb",
                                                        "stack_trace",
                                                        "stack_max_size",
                                                        "trace",
                                                        "stack_tracer_enabled",
                                                        "function_profile_enabled",
                                                        "trace_stat/function0",
                                                        "available_filter_functions"};

std::vector<test::FakeKernel::Function> functions() {
  auto out = test::names({"schedule", "__schedule", "_cond_resched", "yield", "_raw_spin_lock",
                          "_raw_spin_unlock", "mutex_lock", "rcu_read_lock", "sys_read",
                          "SyS_write", "put_page", "vfs_setpos", "default_llseek"});
  out.push_back({"ext4_readpage", "ext4"});
  out.push_back({"ext4_lock_inode", "ext4"});
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  test::FakeKernel kernel("x86_64", functions());
  auto core = test::bootedCore(kernel);
  TraceEnvironment env;
  env.cpus = 2;
  env.context = [] { return TraceContext{}; };
  env.symbol = [&kernel](std::uint64_t addr, bool) {
    auto s = kernel.symbolizer()(addr);
    return s ? s->name : std::string("?");
  };
  env.sampleStack = [](std::uint64_t) { return StackSample{}; };
  TraceFs tracefs(*core, env, 64);

  std::string_view input(reinterpret_cast<const char *>(data), size);
  for (int writes = 0; writes < 16 && !input.empty(); ++writes) {
    const unsigned selector = static_cast<unsigned char>(input.front());
    input.remove_prefix(1);
    const std::size_t end = input.find('\0');
    const std::string_view value = input.substr(0, end);
    input = end == std::string_view::npos ? std::string_view() : input.substr(end + 1);
    const std::string_view file = kFiles[selector % kFiles.size()];
    const bool append = (selector / kFiles.size()) % 2 == 1;
    ftsim::fuzz::accepts([&] { tracefs.write(file, value, append); });
  }
  for (std::string_view file : kReadable)
    ftsim::fuzz::accepts([&] { (void)tracefs.read(file); });
  return 0;
}
